/** `maintenance_state` task names of the write paths. Topic rows use the channel key `topic:<id>`. */
export const ExtractionTask = {
  /** Per channel: the id of the last message the extraction worker finished. */
  channel: 'extraction',
  /** Per topic: the last message taken into a conversation extraction (`extract(topicId)`). */
  conversation: 'conversation',
  /** Per topic of a managed project: the last message taken into a work extraction. */
  work: 'work',
} as const;

/**
 * The `maintenance_state` tasks kept under a channel's id, and those kept under a topic's key (`topicKey`). A channel
 * may be named `topic:<id>`: the two kinds of rows are told apart by their task, never by their key alone.
 */
export const CHANNEL_TASKS = [ExtractionTask.channel, 'episodes'] as const;
export const TOPIC_TASKS = [ExtractionTask.conversation, ExtractionTask.work] as const;

/** Messages read from the log at a time; the watermark moves with each user message extracted. */
export const EXTRACTION_BATCH_SIZE = 100;

/** The `maintenance_state` channel key of a topic's own watermarks. */
export function topicKey(topicId: string): string {
  return `topic:${topicId}`;
}
