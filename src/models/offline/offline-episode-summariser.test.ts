import { describe, expect, it } from 'vitest';
import type { EpisodeMessage } from '../../core/ports/episode-summariser.js';
import { createOfflineEpisodeSummariser } from './offline-episode-summariser.js';

function message(id: number, speaker: string, content: string, role: 'user' | 'assistant' = 'user'): EpisodeMessage {
  return { id, speaker, role, content, createdAt: new Date(Date.UTC(2024, 5, 1, 10, id)).toISOString() };
}

describe('the offline episode summariser', () => {
  const summariser = createOfflineEpisodeSummariser();

  it('keeps the two most informative sentences, in the order they were said, attributed by name', async () => {
    const { summary } = await summariser.summarise({
      channelId: 'ops',
      messages: [
        message(1, 'Oz', 'Hi all!'),
        message(2, 'Mia', 'Morning. The nightly deploy failed because the staging database ran out of disk space.'),
        message(3, 'Oz', 'ok'),
        message(4, 'Oz', 'I will move the backups to the new volume on kestrel tomorrow.'),
        message(5, 'Mia', 'Thanks!'),
      ],
    });
    expect(summary).toBe(
      'Mia: The nightly deploy failed because the staging database ran out of disk space. ' +
        'Oz: I will move the backups to the new volume on kestrel tomorrow.',
    );
  });

  it("prefers a person's sentence to the assistant's when both add as much", async () => {
    const { summary } = await summariser.summarise({
      channelId: 'c',
      messages: [
        message(1, 'Mia', 'The nightly deploy failed because staging ran out of disk space.'),
        message(2, 'mneme', 'Paris trip planned for June.', 'assistant'),
        message(3, 'Oz', 'Berlin visit booked for July.'),
        message(4, 'Oz', 'ok'),
      ],
    });
    expect(summary).toBe(
      'Mia: The nightly deploy failed because staging ran out of disk space. Oz: Berlin visit booked for July.',
    );
  });

  it('cuts very long sentences and stays within one or two sentences', async () => {
    const long = `Oz listed ${Array.from({ length: 80 }, (_, index) => `item${index}`).join(' ')}`;
    const { summary } = await summariser.summarise({
      channelId: 'c',
      messages: [message(1, 'Oz', long), message(2, 'Mia', 'ok'), message(3, 'Mia', 'ok'), message(4, 'Mia', 'ok')],
    });
    expect(summary.length).toBeLessThanOrEqual(600);
    expect(summary).toMatch(/^Oz: Oz listed item0 item1 .* item33… Mia: ok\.$/);
  });

  it('falls back to the first message when no sentence has a meaningful word', async () => {
    const { summary } = await summariser.summarise({
      channelId: 'c',
      messages: [
        message(1, 'Oz', 'so'),
        message(2, 'Mia', 'and the'),
        message(3, 'Oz', 'is it?'),
        message(4, 'Mia', 'it is'),
      ],
    });
    expect(summary).toBe('Oz: so.');
  });
});
