/** The sender id of an assistant reply when the caller names none (`ingestExchange`'s `assistantId`). */
export const ASSISTANT_ID = 'assistant';
/** The actor recorded in the version rows maintenance writes. */
export const MAINTENANCE_ACTOR = 'maintenance';
/** The actor of the version rows an audience change writes. */
export const AUDIENCE_ACTOR = 'audience';
/** The actor of the version rows of exchange memories (a turn and its reply, chunked). */
export const EXCHANGE_ACTOR = 'exchange';
/** The actor of the version rows the CLI's memory and policy commands write. */
export const CLI_ACTOR = 'cli';
/** The actor of the version rows a mem0 import writes. */
export const MEM0_ACTOR = 'mem0-import';
/** The prefix of the actor of the version rows extraction writes (`extractor:<the extractor's id>`). */
export const EXTRACTOR_ACTOR_PREFIX = 'extractor:';

/**
 * The ids mneme records its own actors under (ADR 38): the default sender of assistant replies and the actors of the
 * version rows the engine writes. None of them is a user's: no key, membership, display name, personal memory or user
 * message is made for one, so nobody can rename every assistant reply, take a reply's external id first, or have a
 * purge of "their" data touch what the engine wrote.
 */
export const RESERVED_IDS: readonly string[] = [
  ASSISTANT_ID,
  MAINTENANCE_ACTOR,
  AUDIENCE_ACTOR,
  EXCHANGE_ACTOR,
  CLI_ACTOR,
  MEM0_ACTOR,
];

/** Whether an id is one of mneme's own actors (`RESERVED_IDS`, or an `extractor:` actor). */
export function isReservedId(id: string): boolean {
  return RESERVED_IDS.includes(id) || id.startsWith(EXTRACTOR_ACTOR_PREFIX);
}

/**
 * Whether an id is an actor of the version rows mneme writes (every reserved id but `assistant`, which only sends
 * replies): a purge of a user under such an id (a database from before ADR 38) leaves those rows' actor alone.
 */
export function isEngineActor(id: string): boolean {
  return id !== ASSISTANT_ID && isReservedId(id);
}

/** The words of a refusal of a reserved id, `field` naming where it was given. */
export function reservedIdMessage(field: string, id: string): string {
  return `${field} ${JSON.stringify(id)} is reserved: mneme records its own actors under it (${RESERVED_IDS.join(', ')}, ${EXTRACTOR_ACTOR_PREFIX}...); give the user another id`;
}
