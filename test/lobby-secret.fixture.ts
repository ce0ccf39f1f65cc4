import type { Mneme } from '../src/core/mneme.js';
import type { Memory } from '../src/core/types.js';

/** What Bob says in the public lobby of the audience tests, and a query that finds the fact stored from it. */
export const LOBBY_SECRET = 'The staging database password rotates at quokkamidnight';
export const LOBBY_SECRET_QUERY = 'quokkamidnight staging database password';

/**
 * The lobby declared public with Bob in it, Bob's secret said there and extracted (the offline extractor): the global
 * fact it stored, which the audience tests then narrow (the lobby made private, by `putChannel` or as an older mneme
 * left it).
 */
export async function lobbySecretFact(mneme: Mneme): Promise<Memory> {
  await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
  await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content: LOBBY_SECRET });
  await mneme.whenIdle();
  const [fact] = (await mneme.list({ scope: 'global', limit: 10 })).memories;
  if (!fact) throw new Error('the offline extractor wrote no global fact');
  return fact;
}
