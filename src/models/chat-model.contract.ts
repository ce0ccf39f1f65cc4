import { describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { ChatModel, ChatRequest } from './chat-model.js';

/** How a test file hands its chat model to the contract. */
export interface ChatModelContractSubject {
  /** A working model whose provider answers every request with `reply`; called once per test. */
  makeModel(reply: string): ChatModel | Promise<ChatModel>;
  /** A model whose provider fails, and the advice its error must give; left out for a model that cannot fail. */
  failing?: { makeModel(): ChatModel | Promise<ChatModel>; advice: string };
}

const reply = 'Oz lives in Lyon.\n```json\n{"facts": ["Oz lives in Lyon", "Zoë keeps bees"]}\n```';

const request: ChatRequest = {
  messages: [
    { role: 'system', content: 'Extract facts.' },
    { role: 'user', content: 'I live in Lyon and Zoë keeps bees.' },
  ],
};

const structuredRequest: ChatRequest = {
  ...request,
  jsonSchema: { name: 'facts', schema: { type: 'object', properties: { facts: { type: 'array' } } } },
  temperature: 0.2,
};

/**
 * The behaviour every ChatModel must have. Call it from an adapter's test file with a function that
 * makes the model (against a loopback server or a script, never the internet).
 */
export function describeChatModelContract(name: string, subject: ChatModelContractSubject): void {
  describe(`${name}: chat model contract`, () => {
    it('has a model id', async () => {
      expect((await subject.makeModel(reply)).modelId).toMatch(/\S/);
    });

    it("returns the provider's reply text as it is, with or without a JSON schema", async () => {
      const model = await subject.makeModel(reply);
      expect(await model.complete(request)).toBe(reply);
      expect(await model.complete(structuredRequest)).toBe(reply);
    });

    it("rejects with the signal's reason when the signal has aborted", async () => {
      const model = await subject.makeModel(reply);
      const reason = new Error('shutting down');
      await expect(model.complete(request, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    });

    const { failing } = subject;
    if (!failing) return;
    it('turns a provider failure into MODEL_FAILED with what to do', async () => {
      const model = await failing.makeModel();
      const error = await model.complete(request).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(MnemeError);
      expect(error).toMatchObject({ code: ErrorCode.ModelFailed, message: expect.stringContaining(failing.advice) });
    });
  });
}
