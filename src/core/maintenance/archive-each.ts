import type { WriteContext } from '../../storage/memory-store.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, isMnemeError } from '../errors.js';

/**
 * Archives `ids` in one transaction (with `fade`, puts them to rest: ADR 9); when one of them was
 * archived meanwhile (a user's forget between maintenance's read and its write), archives the others
 * one by one. Returns how many.
 */
export async function archiveEach(
  context: EngineContext,
  ids: readonly number[],
  write: WriteContext,
  options: { fade?: boolean } = {},
): Promise<number> {
  if (ids.length === 0) return 0;
  try {
    return (await context.storage.memories.archive(ids, write, options)).length;
  } catch (error) {
    if (!isMnemeError(error, ErrorCode.Conflict)) throw error;
  }
  let archived = 0;
  for (const id of ids) {
    try {
      archived += (await context.storage.memories.archive([id], write, options)).length;
    } catch (error) {
      if (!isMnemeError(error, ErrorCode.Conflict)) throw error;
    }
  }
  return archived;
}
