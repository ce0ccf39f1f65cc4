import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { ApiKeyRecord, ApiKeyStore } from '../storage/api-key-store.js';
import type { Principal } from './access.js';
import type { Clock } from './clock.js';
import { ErrorCode, MnemeError } from './errors.js';
import { PersonIdSchema, parseInput } from './schemas.js';

const KEY_PATTERN = /^mneme_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/;

export const CreateApiKeyInputSchema = z.strictObject({
  label: z.string({ error: 'label must be a string' }).trim().min(1, 'label must not be empty').max(100),
  userId: PersonIdSchema.optional(),
});
export type CreateApiKeyInput = z.input<typeof CreateApiKeyInputSchema>;

/** The prefix of a key to revoke: an empty one (an unset shell variable) is bad input, not a key not found. */
export const ApiKeyPrefixSchema = z
  .string({ error: 'prefix must be a string' })
  .trim()
  .min(1, 'prefix must not be empty: give the prefix of the key, as the list of keys shows it')
  // The whole key (pasted from where it is configured) stands for its prefix.
  .transform((text) => KEY_PATTERN.exec(text)?.[1] ?? text)
  .refine((prefix) => /^[0-9a-f]{12}$/.test(prefix), {
    error: 'a key prefix is 12 hexadecimal characters, as the list of keys shows it (or give the whole key)',
  });

/** A new key: `key` is shown once and never stored. */
export interface CreatedApiKey extends ApiKeyRecord {
  key: string;
}

/** API keys: only a prefix and a SHA-256 hash are stored (keys are 192-bit random, so a slow hash adds nothing). */
export interface ApiKeys {
  create(input: CreateApiKeyInput): Promise<CreatedApiKey>;
  list(): Promise<ApiKeyRecord[]>;
  /** Revokes the active key with this prefix: NOT_FOUND when none has it, INVALID_INPUT when it is empty. */
  revoke(prefix: string): Promise<ApiKeyRecord>;
  /** The principal a presented key stands for, or null when it is unknown, malformed or revoked. */
  authenticate(key: string): Promise<Principal | null>;
  /** Whether any key is active. */
  hasAny(): Promise<boolean>;
  /**
   * Whether a key was ever created, revoked ones included. Once one was, the HTTP service never runs
   * open again, unless its operator starts it open on purpose (`mneme serve --open`).
   */
  everCreated(): Promise<boolean>;
}

export function createApiKeys(store: ApiKeyStore, clock: Clock): ApiKeys {
  return {
    async create(input) {
      const parsed = parseInput(CreateApiKeyInputSchema, input, 'API key');
      const prefix = randomBytes(6).toString('hex');
      const key = `mneme_${prefix}_${randomBytes(24).toString('base64url')}`;
      const record = await store.insert(
        { prefix, hash: hashOf(key), label: parsed.label, userId: parsed.userId ?? null },
        clock.now(),
      );
      return { ...record, key };
    },

    list: () => store.list(),

    async revoke(input) {
      const prefix = parseInput(ApiKeyPrefixSchema, input, 'API key prefix');
      const record = await store.revoke(prefix, clock.now());
      if (!record) throw new MnemeError(ErrorCode.NotFound, `no active API key has the prefix ${prefix}`);
      return record;
    },

    async authenticate(key) {
      const match = KEY_PATTERN.exec(key.trim());
      if (!match?.[1]) return null;
      const record = await store.findActive(match[1]);
      if (!record) return null;
      const presented = Buffer.from(hashOf(key.trim()), 'hex');
      const stored = Buffer.from(record.hash, 'hex');
      if (presented.length !== stored.length || !timingSafeEqual(presented, stored)) return null;
      const now = clock.now();
      // The last use is bookkeeping: a busy or read-only database must not refuse a valid key. Written at most once a
      // minute, and at once when it lies ahead (the clock was set back): else it would stay in the future until the
      // clock passed it again (attack 25, time).
      const since = record.lastUsedAt ? now - Date.parse(record.lastUsedAt) : Number.POSITIVE_INFINITY;
      if (since > 60_000 || since < 0) {
        await store.markUsed(record.id, now).catch(() => undefined);
      }
      return record.userId === null
        ? { kind: 'admin', label: record.label, keyId: record.id, keyCreatedAt: Date.parse(record.createdAt) }
        : { kind: 'user', userId: record.userId, label: record.label, keyId: record.id };
    },

    async hasAny() {
      return (await store.countActive()) > 0;
    },

    async everCreated() {
      return store.everCreated();
    },
  };
}

function hashOf(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
