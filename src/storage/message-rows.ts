import { toIso } from '../core/clock.js';
import type { Message, MessageRole } from './message-store.js';

/** A row of `messages` (times as epoch milliseconds), the same in every storage adapter. */
export interface MessageRow {
  id: number;
  channel_id: string;
  sender_id: string;
  role: MessageRole;
  content: string;
  topic_id: string | null;
  reply_to: number | null;
  external_id: string | null;
  created_at: number;
}

/** The message a row of `messages` holds, its time as an ISO 8601 string. */
export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    channelId: row.channel_id,
    senderId: row.sender_id,
    role: row.role,
    content: row.content,
    topicId: row.topic_id,
    replyTo: row.reply_to,
    externalId: row.external_id,
    createdAt: toIso(row.created_at),
  };
}
