/** An API key as stored: never the key itself, only its prefix and hash. */
export interface ApiKeyRecord {
  id: number;
  /** The public part of the key, shown in lists to tell keys apart. */
  prefix: string;
  label: string;
  /** The user a user-bound key acts as; null for an administrator key. */
  userId: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** API keys of the HTTP service. */
export interface ApiKeyStore {
  insert(
    key: { prefix: string; hash: string; label: string; userId: string | null },
    at: number,
  ): Promise<ApiKeyRecord>;
  /** The active (not revoked) key with this prefix, with its hash, or null. */
  findActive(prefix: string): Promise<(ApiKeyRecord & { hash: string }) | null>;
  /** Records a successful use (at most once a minute per key is enough). */
  markUsed(id: number, at: number): Promise<void>;
  list(): Promise<ApiKeyRecord[]>;
  /** Revokes the key with this prefix; null when there is none. */
  revoke(prefix: string, at: number): Promise<ApiKeyRecord | null>;
  /** How many keys are active. */
  countActive(): Promise<number>;
  /** Whether a key was ever created, revoked and deleted ones included. */
  everCreated(): Promise<boolean>;
}
