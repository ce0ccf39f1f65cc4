import { z } from 'zod';
import { unusableVector } from '../core/checked-embedder.js';
import { errorMessage } from '../core/errors.js';
import { completeStructured } from '../models/chat/chat-structured-output.js';
import type { ChatModel } from '../models/chat-model.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { type ProviderDependencies, type ProviderSettings, resolveChatModel, resolveEmbedder } from './providers.js';

/** The outcome of one real call to a provider. */
export interface ModelCheck {
  ok: boolean;
  detail: string;
}

/** Embeds one sentence and checks the vector: its length, and that the engine can search by it. */
export async function checkEmbeddingModel(model: EmbeddingModel): Promise<ModelCheck> {
  try {
    const [vector] = await model.embed(['mneme doctor checks this embedding model'], 'query');
    if (!vector || vector.length !== model.dimensions) {
      return {
        ok: false,
        detail: `expected a vector of ${model.dimensions} dimensions, got ${vector?.length ?? 'none'}`,
      };
    }
    // What the engine refuses to store (`checkedEmbedder`): every write would then store no vector.
    const problem = unusableVector(vector);
    if (problem !== null) return { ok: false, detail: `the vector cannot be searched: ${problem}` };
    return { ok: true, detail: `embedded a test sentence: ${vector.length} dimensions` };
  } catch (error) {
    return { ok: false, detail: errorMessage(error) };
  }
}

const CheckReplySchema = z.object({ ok: z.boolean() });

/** Asks for a tiny JSON object through structured output and checks that it came back valid. */
export async function checkChatModel(model: ChatModel): Promise<ModelCheck> {
  try {
    await completeStructured(model, {
      schema: CheckReplySchema,
      name: 'check',
      messages: [{ role: 'user', content: 'Reply with this JSON object and nothing else: {"ok": true}' }],
    });
    return { ok: true, detail: 'answered with valid JSON' };
  } catch (error) {
    return { ok: false, detail: errorMessage(error) };
  }
}

/** What `mneme doctor` found about one provider setting. */
export interface ProviderReport {
  /** `MNEME_EMBEDDER` or `MNEME_CHAT`. */
  variable: string;
  setting: string;
  /** The active model id, or null (none). */
  model: string | null;
  /** The vector length, for an embedding model. */
  dimensions?: number;
  /** Why this model (or none) is active. */
  reason: string;
  /** The real call's outcome; null when there is no model to call. */
  check: ModelCheck | null;
}

/** Resolves both provider settings as the engine would and checks each active model with a real call. */
export async function diagnoseProviders(
  settings: ProviderSettings,
  dependencies: ProviderDependencies = {},
): Promise<{ embedder: ProviderReport; chat: ProviderReport }> {
  const embedder = await resolveEmbedder(settings.embedder, settings, dependencies).then(
    async (resolved): Promise<ProviderReport> => ({
      variable: 'MNEME_EMBEDDER',
      setting: resolved.setting,
      model: resolved.model?.modelId ?? null,
      ...(resolved.model ? { dimensions: resolved.model.dimensions } : {}),
      reason: resolved.reason,
      check: resolved.model ? await checkEmbeddingModel(resolved.model) : null,
    }),
    (error: unknown) => failedReport('MNEME_EMBEDDER', settings.embedder, error),
  );
  const chat = await resolveChatModel(settings.chat, settings, dependencies).then(
    async (resolved): Promise<ProviderReport> => ({
      variable: 'MNEME_CHAT',
      setting: resolved.setting,
      model: resolved.model?.modelId ?? null,
      reason: resolved.reason,
      check: resolved.model ? await checkChatModel(resolved.model) : null,
    }),
    (error: unknown) => failedReport('MNEME_CHAT', settings.chat, error),
  );
  return { embedder, chat };
}

function failedReport(variable: string, setting: string, error: unknown): ProviderReport {
  return {
    variable,
    setting,
    model: null,
    reason: 'the setting could not be used',
    check: { ok: false, detail: errorMessage(error) },
  };
}
