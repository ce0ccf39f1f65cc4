import { expect, it } from 'vitest';
import { ownerKey } from '../src/core/scope.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { Storage } from '../src/storage/storage.js';
import { onEachStore } from './attack31d-stores.fixture.js';

/**
 * Attack 31d: a namesake's arrival (and a rename) reads only the memories whose text can hold the name (ADR 44, session
 * 31): the text index finds its words, or the text holds it with its ASCII letters in any case. The label itself reads
 * the name in any case as Unicode folds it, so a mention in another case the index or the ASCII fold reads apart from
 * the name was left unlabelled: "ΝΊΚΟΣ" (final sigma) on PostgreSQL, "ZOË" on a server whose locale is C, "ſam" (long
 * s) on PostgreSQL, "🙂CHLOË" (a sign glued to it) on SQLite. Eve's words then read as those of Bob, who arrived with
 * the name.
 */

const at = Date.parse('2026-03-02T10:00:00Z');
const cases = [
  { name: 'Νίκος', said: 'ΝΊΚΟΣ approved the wire', labelled: 'Νίκος (eve0) approved the wire' },
  { name: 'Zoë', said: 'ZOË approved the wire', labelled: 'Zoë (eve1) approved the wire' },
  { name: 'Chloë', said: 'Ask 🙂CHLOË about the wire', labelled: 'Ask 🙂Chloë (eve2) about the wire' },
  { name: 'Sam', said: 'ſam approved the wire', labelled: 'Sam (eve3) approved the wire' },
];

async function attack(storage: Storage): Promise<string[]> {
  const contents: string[] = [];
  for (const [index, { name, said }] of cases.entries()) {
    const eve = `eve${index}`;
    await storage.directory.putUser({ id: eve, displayName: name }, at);
    const fact = globalMemory(said, {
      scope: 'personal',
      owner: ownerKey('personal', { userId: eve }),
      userId: eve,
      source: 'extraction',
    });
    const [written] = await storage.memories.insert([fact], { at: at + 1, actor: 'tester' });
    // Bob arrives with Eve's name: her memory must say it is hers.
    await storage.directory.putUser({ id: `bob${index}`, displayName: name }, at + 2);
    const [now] = await storage.memories.get([written?.id ?? 0]);
    contents.push(now?.content ?? '');
  }
  return contents;
}

onEachStore((open) => {
  it('labels a mention of a name in another case when a namesake arrives', async () => {
    const storage = await open();
    try {
      expect(await attack(storage)).toEqual(cases.map((each) => each.labelled));
    } finally {
      await storage.close();
    }
  }, 60_000);
});
