import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode } from '../../core/errors.js';
import { ExtractedFactsSchema } from '../../core/ports/fact-extractor.js';
import { createScriptedChatModel } from '../fake/scripted-chat-model.js';
import { completeStructured, readStructured, toJsonSchema } from './chat-structured-output.js';

const Facts = z.object({ facts: ExtractedFactsSchema });
const ask = [{ role: 'user' as const, content: 'Oz: I moved to Lyon.' }];

describe('structured output', () => {
  it('sends the schema as JSON Schema with temperature 0 and returns the validated value with defaults', async () => {
    const model = createScriptedChatModel(['{"facts": [{"content": " Oz lives in Lyon "}]}']);
    const value = await completeStructured(model, { schema: Facts, name: 'facts', messages: ask });
    expect(value).toEqual({
      facts: [{ content: 'Oz lives in Lyon', category: 'fact', importance: 0.5, scope: 'personal' }],
    });
    expect(model.requests[0]).toMatchObject({
      temperature: 0,
      jsonSchema: { name: 'facts', schema: toJsonSchema(Facts) },
    });
    expect(toJsonSchema(Facts)).toMatchObject({ type: 'object', required: ['facts'] });
    expect(toJsonSchema(Facts)).not.toHaveProperty('$schema');
  });

  it('repairs code fences, prose around the JSON and trailing commas', () => {
    const replies = [
      '```json\n{"facts": [{"content": "Oz lives in Lyon"}]}\n```',
      'Here are the facts:\n{"facts": [{"content": "Oz lives in Lyon",},],}\nHope this helps!',
      '{"facts": [{"content": "Oz wrote \\"a, b,]\\" once",}]}',
    ];
    const contents = replies.map((reply) => {
      const reading = readStructured(reply, Facts);
      if (!reading.ok) throw new Error(reading.problem);
      return reading.value.facts[0]?.content;
    });
    expect(contents).toEqual(['Oz lives in Lyon', 'Oz lives in Lyon', 'Oz wrote "a, b,]" once']);
  });

  it('turns a single object into the array the schema expects, at the root or in a field', () => {
    expect(readStructured('{"content": "Oz likes tea"}', ExtractedFactsSchema)).toMatchObject({
      ok: true,
      value: [{ content: 'Oz likes tea' }],
    });
    expect(readStructured('{"facts": {"content": "Oz likes tea"}}', Facts)).toMatchObject({
      ok: true,
      value: { facts: [{ content: 'Oz likes tea' }] },
    });
    expect(readStructured('[{"content": "Oz likes tea"}]', Facts)).toMatchObject({
      ok: true,
      value: { facts: [{ content: 'Oz likes tea' }] },
    });
  });

  it('retries once with what was wrong, and uses the second reply', async () => {
    const model = createScriptedChatModel(['Sure! Oz moved.', '{"facts": []}']);
    expect(await completeStructured(model, { schema: Facts, name: 'facts', messages: ask })).toEqual({ facts: [] });
    expect(model.requests).toHaveLength(2);
    const retry = model.requests[1]?.messages ?? [];
    expect(retry.slice(0, 2)).toEqual([ask[0], { role: 'assistant', content: 'Sure! Oz moved.' }]);
    expect(retry[2]?.content).toMatch(/^That reply could not be used: it is not valid JSON/);
  });

  it('fails with MODEL_FAILED after a second unusable reply, naming the problem', async () => {
    const model = createScriptedChatModel(['{"facts": [{"category": "fact"}]}', '{"facts": [{"category": "fact"}]}']);
    const error = await completeStructured(model, { schema: Facts, name: 'facts', messages: ask }).catch(
      (caught) => caught,
    );
    expect(error.code).toBe(ErrorCode.ModelFailed);
    expect(error.message).toMatch(
      /^scripted returned unusable JSON for facts twice \(it does not match the schema: facts\.0\.content: /,
    );
    expect(model.requests[1]?.messages[2]?.content).toMatch(/facts\.0\.content/);
  });
});
