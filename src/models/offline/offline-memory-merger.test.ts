import { describe, expect, it } from 'vitest';
import type { MergeCandidate } from '../../core/ports/memory-merger.js';
import { createOfflineMemoryMerger } from './offline-memory-merger.js';

function memory(id: number, content: string, day = id): MergeCandidate {
  return { id, content, category: 'fact', importance: 0.5, createdAt: new Date(Date.UTC(2024, 5, day)).toISOString() };
}

describe('the offline memory merger', () => {
  const merger = createOfflineMemoryMerger();

  it('keeps the most complete statement when the others add nothing', async () => {
    const merged = await merger.merge({
      memories: [memory(1, 'Oz prefers dark mode'), memory(2, 'Oz prefers dark mode in every editor')],
    });
    expect(merged).toEqual({ content: 'Oz prefers dark mode in every editor' });
  });

  it('adds the distinct details of the others, oldest first', async () => {
    const merged = await merger.merge({
      memories: [
        memory(1, 'Oz lives in Berlin. Oz has a dog named Rex.'),
        memory(2, 'Oz lives in Berlin and works at Acme as a nurse'),
        memory(3, 'Oz lives in Berlin'),
      ],
    });
    expect(merged.content).toBe('Oz lives in Berlin and works at Acme as a nurse. Oz has a dog named Rex.');
  });

  it('breaks a tie in completeness by the newer statement', async () => {
    const merged = await merger.merge({
      memories: [memory(1, 'Mia uses vim daily'), memory(2, 'Mia uses emacs daily')],
    });
    expect(merged.content).toBe('Mia uses emacs daily. Mia uses vim daily.');
  });

  it('keeps a statement whose words the others hold between them but do not say', async () => {
    const merged = await merger.merge({
      memories: [memory(1, 'Sam likes tea. Lee likes coffee.'), memory(2, 'Sam likes coffee')],
    });
    expect(merged.content).toBe('Sam likes tea. Lee likes coffee. Sam likes coffee.');
  });

  it('keeps a statement with the words of another in another order', async () => {
    const merged = await merger.merge({
      memories: [
        memory(1, 'The team standup moved from Monday to Wednesday'),
        memory(2, 'The team standup moved from Wednesday to Monday'),
      ],
    });
    expect(merged.content).toBe(
      'The team standup moved from Wednesday to Monday. The team standup moved from Monday to Wednesday.',
    );
  });

  it('refuses a cluster that one memory cannot hold whole, rather than dropping what does not fit', async () => {
    const long = (topic: string) => `${topic} ${Array.from({ length: 700 }, (_, at) => `${topic}${at}`).join(' ')}`;
    await expect(
      merger.merge({ memories: [memory(1, long('alpha')), memory(2, long('beta')), memory(3, long('gamma'))] }),
    ).rejects.toThrow('the 3 memories of #1 say more than one memory holds (10000 characters)');
  });
});
