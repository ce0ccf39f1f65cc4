/** Deterministic collaborators for your own tests of code that uses mneme. */
export { createFakeEmbeddingModel, type FakeEmbeddingModelOptions } from './models/fake/fake-embedding-model.js';
export { createScriptedChatModel, type ScriptedReply } from './models/fake/scripted-chat-model.js';

/** A clock that stands still until you move it. */
export function createFixedClock(start: number | string | Date = '2024-06-15T12:00:00.000Z') {
  let now = new Date(start).getTime();
  return {
    now: () => now,
    set(time: number | string | Date) {
      now = new Date(time).getTime();
    },
    advance(milliseconds: number) {
      now += milliseconds;
    },
  };
}
