import { ErrorCode, MnemeError } from '../core/errors.js';

/**
 * The `service_state` row in which the target of a `mneme copy` holds the digest of its source until the copy is
 * complete (`config/copy-database.ts`): a resumed copy compares it with the source's digest, and every other opening
 * of the database refuses it (`unfinishedCopy`).
 */
export const COPY_MARK = 'copy_source_digest';

/**
 * The refusal of a database that holds `COPY_MARK` (CONFLICT), for every opening but the copy's own: it holds part of
 * its source at most (a service would answer from that part), and a policy its opening wrote before the copy reached
 * the policy would stay in place of the source's, the copy keeping rows already there.
 */
export function unfinishedCopy(description: string): MnemeError {
  return new MnemeError(
    ErrorCode.Conflict,
    `${description} is the target of a mneme copy that has not ended (it was stopped, or failed before its end), and holds part of its source at most; run the same mneme copy again to finish it, or copy into a new database`,
  );
}
