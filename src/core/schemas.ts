import { z } from 'zod';
import { ErrorCode, type FieldIssue, MnemeError } from './errors.js';
import { unfitName } from './name-key.js';
import { ASSISTANT_ID, isReservedId, reservedIdMessage } from './reserved-ids.js';
import type { Scope } from './types.js';

/** Longest memory content accepted, in characters. */
export const MAX_CONTENT_CHARS = 10_000;
/** Longest id (user, channel, project, topic) accepted, in characters. */
export const MAX_ID_CHARS = 200;
/** Largest page `list` returns. */
export const MAX_PAGE_SIZE = 500;

const scopes = ['personal', 'room', 'project', 'session', 'global'] as const satisfies readonly Scope[];

export const ScopeSchema = z.enum(scopes, {
  error: () => `scope must be one of ${scopes.join(', ')}`,
});

const externalId = (name: string) =>
  z
    .string({ error: `${name} must be a string` })
    .trim()
    .min(1, `${name} must not be empty`)
    .max(MAX_ID_CHARS, `${name} is longer than ${MAX_ID_CHARS} characters`);

export const UserIdSchema = externalId('userId');
/**
 * A user id that makes someone a user (a key, a membership, a display name, a personal memory, an exchange): none of
 * mneme's own actors (`assistant`, `maintenance`, ...; ADR 38). Reads name any id: a database from before keeps
 * working.
 */
const personId = (name: string) =>
  externalId(name).refine((id) => !isReservedId(id), {
    error: (issue) => reservedIdMessage(name, String(issue.input)),
  });
export const PersonIdSchema = personId('userId');
/** A member of a channel, topic or project: a user id none of mneme's own actors holds. */
export const MemberIdSchema = personId('member');
/** A message's sender: a user id, named `sender` in errors. */
export const SenderIdSchema = externalId('sender');
/** The sender id recorded for an assistant reply: a user id, named `assistantId` in errors. */
export const AssistantIdSchema = externalId('assistantId');
export const ChannelIdSchema = externalId('channelId');
export const ProjectIdSchema = externalId('projectId');
export const TopicIdSchema = externalId('topicId');
/** A chat platform's id of a message (its event id): a message stored again under it is a duplicate. */
export const MessageExternalIdSchema = externalId('externalId');

/** A memory id: a positive integer, or a string of digits (as typed on a command line or in a URL). */
export const MemoryIdSchema = z
  .union([z.number(), z.string().trim().regex(/^\d+$/, 'id must be a positive integer').transform(Number)], {
    error: 'id must be a positive integer',
  })
  .pipe(z.number().int('id must be a positive integer').positive('id must be a positive integer'));

export const ContentSchema = z
  .string({ error: 'content must be a string' })
  .trim()
  .min(1, 'content must not be empty')
  .max(MAX_CONTENT_CHARS, `content is longer than ${MAX_CONTENT_CHARS} characters`);

export const CategorySchema = z
  .string({ error: 'category must be a string' })
  .trim()
  .toLowerCase()
  .min(1, 'category must not be empty')
  .max(64, 'category is longer than 64 characters');

/** Importance is a number; values outside 0..1 are clamped, not refused. */
export const ImportanceSchema = z
  .number({ error: 'importance must be a number between 0 and 1' })
  .refine(Number.isFinite, 'importance must be a finite number')
  .transform((value) => Math.min(1, Math.max(0, value)));

const ActorSchema = z.string().trim().min(1).max(MAX_ID_CHARS);

export const ViewerSchema = z.strictObject({
  userId: UserIdSchema.optional(),
  channelId: ChannelIdSchema.optional(),
  projectId: ProjectIdSchema.optional(),
  topicId: TopicIdSchema.optional(),
});

const ownerIds = {
  userId: UserIdSchema.optional(),
  channelId: ChannelIdSchema.optional(),
  projectId: ProjectIdSchema.optional(),
  topicId: TopicIdSchema.optional(),
};

const ownerRequirement: Record<Scope, keyof typeof ownerIds | null> = {
  personal: 'userId',
  room: 'channelId',
  project: 'projectId',
  session: 'topicId',
  global: null,
};

/** The fields of a manual memory; the actor who writes it is not one of them (the body of `POST /api/memories`). */
const memoryCreateFields = {
  content: ContentSchema,
  /** Left out: the narrowest scope its ids name ({@link impliedScope}). */
  scope: ScopeSchema.optional(),
  ...ownerIds,
  userId: PersonIdSchema.optional(),
  category: CategorySchema.default('general'),
  importance: ImportanceSchema.default(0.5),
  pinned: z.boolean({ error: 'pinned must be true or false' }).default(false),
};

/** A manual memory's scope rules: no session memory, and the owner id its scope needs. */
function checkManualScope(
  input: { scope: Scope } & { [field in keyof typeof ownerIds]?: string | undefined },
  context: z.RefinementCtx,
): void {
  if (input.scope === 'session') {
    context.addIssue({
      code: 'custom',
      path: ['scope'],
      message:
        'session memories come from conversation extraction (extract(topicId)); use scope personal, room, project or global',
    });
    return;
  }
  const field = ownerRequirement[input.scope];
  if (field !== null && input[field] === undefined) {
    context.addIssue({ code: 'custom', path: [field], message: `scope ${input.scope} needs ${field}` });
  }
}

/**
 * The scope of a manual memory given without one: the narrowest its ids name (a `userId`: personal; else a
 * `channelId`: room; else a `projectId`: project), else global. `{ content, userId }` was a global memory
 * every viewer saw, where the user meant one of their own.
 */
export function impliedScope(ids: {
  userId?: string | undefined;
  channelId?: string | undefined;
  projectId?: string | undefined;
}): Scope {
  if (ids.userId !== undefined) return 'personal';
  if (ids.channelId !== undefined) return 'room';
  if (ids.projectId !== undefined) return 'project';
  return 'global';
}

/** A manual memory's input with its scope decided. */
function withScope<
  T extends {
    scope?: Scope | undefined;
    userId?: string | undefined;
    channelId?: string | undefined;
    projectId?: string | undefined;
  },
>(input: T): T & { scope: Scope } {
  return { ...input, scope: input.scope ?? impliedScope(input) };
}

/**
 * The body of `POST /api/memories`: a manual memory, written by the caller (the route sets the actor). Its scope is
 * checked as it will be implied, but left out when it was: a user key that names none writes its own memory, which
 * `remember` tells only from a scope left out (ADR 5, 2026-12-03).
 */
export const MemoryCreateSchema = z
  .strictObject(memoryCreateFields)
  .superRefine((input, context) => checkManualScope(withScope(input), context));

/** Input of `remember`: a manual memory. */
export const RememberInputSchema = z
  .strictObject({ ...memoryCreateFields, actor: ActorSchema.optional() })
  .transform(withScope)
  .superRefine(checkManualScope);
export type RememberInput = z.input<typeof RememberInputSchema>;

/** The fields an edit may change, and why (the body of `PATCH /api/memories/{id}`). */
export const MemoryPatchSchema = z.strictObject({
  content: ContentSchema.optional(),
  category: CategorySchema.optional(),
  importance: ImportanceSchema.optional(),
  pinned: z.boolean({ error: 'pinned must be true or false' }).optional(),
  reason: z.string().trim().max(500).optional(),
});

/** Input of `update`: at least one field to change. */
export const UpdateInputSchema = MemoryPatchSchema.extend({
  id: MemoryIdSchema,
  /** When given, NOT_FOUND unless this viewer may see the memory. */
  viewer: ViewerSchema.optional(),
  actor: ActorSchema.optional(),
}).refine(
  (input) =>
    input.content !== undefined ||
    input.category !== undefined ||
    input.importance !== undefined ||
    input.pinned !== undefined,
  { message: 'nothing to update: give content, category, importance or pinned' },
);
export type UpdateInput = z.input<typeof UpdateInputSchema>;

/** Input of `get`: an id, and optionally the viewer who must be able to see it. */
export const GetInputSchema = z.strictObject({ id: MemoryIdSchema, viewer: ViewerSchema.optional() });
export type GetInput = z.input<typeof GetInputSchema>;

/** Input of `forget` and `restore`. */
export const MemoryActionInputSchema = z.strictObject({
  id: MemoryIdSchema,
  /** When given, NOT_FOUND unless this viewer may see the memory. */
  viewer: ViewerSchema.optional(),
  actor: ActorSchema.optional(),
  reason: z.string().trim().max(500).optional(),
});
export type MemoryActionInput = z.input<typeof MemoryActionInputSchema>;

const PageLimitSchema = z
  .number({ error: 'limit must be a number' })
  .int('limit must be a whole number')
  .min(1, 'limit must be at least 1')
  .max(MAX_PAGE_SIZE, `limit must be at most ${MAX_PAGE_SIZE}`);

/** A whole number, 0 or more, named in its messages. */
const wholeNumber = (name: string) =>
  z
    .number({ error: `${name} must be a number` })
    .int(`${name} must be a whole number`)
    .min(0, `${name} must not be negative`);

const PageOffsetSchema = wholeNumber('offset');

/** Filters of `list`. */
export const ListFilterSchema = z.strictObject({
  /** Only memories this viewer may see; without it, `list` is an administrator's view of every scope. */
  viewer: ViewerSchema.optional(),
  scope: ScopeSchema.optional(),
  ...ownerIds,
  category: CategorySchema.optional(),
  archived: z
    .enum(['exclude', 'include', 'only'], { error: 'archived must be exclude, include or only' })
    .default('exclude'),
  limit: PageLimitSchema.default(50),
  offset: PageOffsetSchema.default(0),
});
export type ListFilter = z.input<typeof ListFilterSchema>;
export type ParsedListFilter = z.output<typeof ListFilterSchema>;

/** A number as a query string carries it: a number, or decimal digits (`1e3`, `0x10`, `true` are refused). */
export function queryNumber(name: string, schema: z.ZodType<number, number>) {
  const digits = z
    .string()
    .regex(/^\s*[+-]?\d+(\.\d+)?\s*$/)
    .transform(Number);
  return z.union([z.number(), digits], { error: `${name} must be a number` }).pipe(schema);
}

/** The filters of `list` as a query string gives them (`GET /api/memories?limit=20`): no viewer, digits for numbers. */
export const ListQuerySchema = ListFilterSchema.omit({ viewer: true }).extend({
  limit: queryNumber('limit', PageLimitSchema).default(50),
  offset: queryNumber('offset', PageOffsetSchema).default(0),
});

/** Longest recall query accepted, in characters. */
export const MAX_QUERY_CHARS = 20_000;
/**
 * The text cut to `MAX_QUERY_CHARS` characters, its start kept (or its end, with `end`), never between the
 * two halves of a surrogate pair (an emoji): a lone half is ill-formed text, which `parseInput` refuses.
 */
export function clipQuery(text: string, keep: 'start' | 'end' = 'start'): string {
  return clipChars(text, MAX_QUERY_CHARS, keep);
}

/** The text cut to at most `maxChars` characters, its start kept (or its end), never inside a surrogate pair. */
export function clipChars(text: string, maxChars: number, keep: 'start' | 'end' = 'start'): string {
  if (text.length <= maxChars) return text;
  if (keep === 'end') {
    const clipped = text.slice(-maxChars);
    return /^[\udc00-\udfff]/.test(clipped) ? clipped.slice(1) : clipped;
  }
  const clipped = text.slice(0, maxChars);
  return /[\ud800-\udbff]$/.test(clipped) ? clipped.slice(0, -1) : clipped;
}

/** Most direct hits one recall returns (linked memories may join them). */
export const MAX_TOP_K = 100;

export const QuerySchema = z
  .string({ error: 'query must be a string' })
  .trim()
  .min(1, 'query must not be empty')
  .max(MAX_QUERY_CHARS, `query is longer than ${MAX_QUERY_CHARS} characters`);

/** Direct hits to return; the database policy's (`recall.topK`, `context.topK`) when left out. */
export const TopKSchema = z
  .number({ error: 'topK must be a number' })
  .int('topK must be a whole number')
  .min(1, 'topK must be at least 1')
  .max(MAX_TOP_K, `topK must be at most ${MAX_TOP_K}`)
  .optional();

/** Input of `recall`. Without a viewer, only global memories are searched. */
export const RecallInputSchema = z.strictObject({
  query: QuerySchema,
  viewer: ViewerSchema.default({}),
  topK: TopKSchema,
  /** Adds a one-line explanation of its score to every hit. */
  explain: z.boolean({ error: 'explain must be true or false' }).default(false),
  /** `hybrid` or `recent-first`; the policy's mode when left out. */
  mode: z.enum(['hybrid', 'recent-first'], { error: 'mode must be hybrid or recent-first' }).optional(),
  /** Appends the viewer channel's latest user messages to the query. */
  conversationAware: z.boolean({ error: 'conversationAware must be true or false' }).default(false),
  /** Looks without touching: no access count, last access or reinforcement is written (a debug search). */
  inspect: z.boolean({ error: 'inspect must be true or false' }).default(false),
});
export type RecallInput = z.input<typeof RecallInputSchema>;

/** Input of `context`: conversation-aware unless told otherwise. */
export const ContextInputSchema = z.strictObject({
  query: QuerySchema,
  viewer: ViewerSchema.default({}),
  topK: TopKSchema,
  /** Appends the viewer channel's latest user messages to the query; the policy's `context.conversationAware` when left out. */
  conversationAware: z.boolean({ error: 'conversationAware must be true or false' }).optional(),
  /** Builds the block without touching its memories: nothing is written (a debug look at the context). */
  inspect: z.boolean({ error: 'inspect must be true or false' }).default(false),
});
export type ContextInput = z.input<typeof ContextInputSchema>;

/**
 * Parses `input` with `schema`, or throws an INVALID_INPUT MnemeError that names every invalid field.
 * Every face calls this with the same schema, so the same input is refused the same way everywhere.
 */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown, what = 'input'): z.output<Schema> {
  const result = schema.safeParse(input);
  const issues: FieldIssue[] = result.success
    ? illFormedText(result.data)
    : result.error.issues.map((issue) => ({
        path: issue.path.map(String).join('.'),
        message: unrecognisedKeysMessage(issue) ?? issue.message,
      }));
  if (result.success && issues.length === 0) return result.data;
  const summary = issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join('; ');
  throw new MnemeError(ErrorCode.InvalidInput, `invalid ${what}: ${summary}`, { issues });
}

/** A UTF-16 surrogate without its pair: no Unicode character, and stored as bytes that read back as U+FFFD. */
const loneSurrogate = /\p{Cs}/u;

/** What is wrong with `text` as text mneme keeps, or undefined when nothing is. */
function textFault(text: string): string | undefined {
  if (loneSurrogate.test(text)) {
    return 'text must be well-formed Unicode: it holds a lone surrogate (\\ud800 to \\udfff without its pair)';
  }
  // PostgreSQL's text cannot hold U+0000, so no store takes it: what one store kept could not be copied to the other
  // (ADR 43).
  if (text.includes('\u0000')) return 'text must not hold the NUL character (\\u0000), which PostgreSQL cannot store';
  return undefined;
}

/**
 * The first string of a parsed input (its fields, items and keys, walked without recursion) that holds a
 * lone surrogate (JSON's `"\ud800"`) or the NUL character (`"\u0000"`), as an issue; none when every string is
 * text every store keeps. A lone surrogate would be stored altered (it reads back as replacement characters) and a
 * NUL is refused by PostgreSQL, so both are refused at every face on every store (ADR 43).
 */
function illFormedText(value: unknown): FieldIssue[] {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value: item, path } = next;
    if (typeof item === 'string') {
      const fault = textFault(item);
      if (fault !== undefined) return [{ path, message: fault }];
    } else if (Array.isArray(item)) {
      item.forEach((element, index) => {
        pending.push({ value: element, path: path ? `${path}.${index}` : String(index) });
      });
    } else if (typeof item === 'object' && item !== null && Object.getPrototypeOf(item) === Object.prototype) {
      // Data fields only: a getter (an engine handed in as an option, `mneme.as(...)`) is not text and may refuse to be read.
      for (const [key, field] of Object.entries(Object.getOwnPropertyDescriptors(item))) {
        if (!field.enumerable || !('value' in field)) continue;
        const at = path ? `${path}.${key}` : key;
        const fault = textFault(key);
        if (fault !== undefined) return [{ path: at, message: fault }];
        pending.push({ value: field.value, path: at });
      }
    }
  }
  return [];
}

function unrecognisedKeysMessage(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code !== 'unrecognized_keys') return undefined;
  return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
}

/** Longest message accepted, in characters. */
export const MAX_MESSAGE_CHARS = 32_000;
/**
 * `text` as one message can hold it: whole when it fits in `MAX_MESSAGE_CHARS`, else its start and its end (a long
 * paste's question is often at its end) with a line saying how many characters between them were left out (plus
 * `leftOutBefore`, characters a reader already dropped from the middle of `text`). The faces that record a chat they
 * relay (the proxy, the AI SDK middleware) keep a long turn this way rather than lose it.
 */
export function fitMessage(text: string, leftOutBefore = 0): string {
  if (text.length <= MAX_MESSAGE_CHARS) return text;
  const end = clipChars(text, Math.floor(MAX_MESSAGE_CHARS / 4), 'end');
  // 80 characters are kept for the line in between, which is shorter.
  const start = clipChars(text, MAX_MESSAGE_CHARS - end.length - 80);
  return `${start}\n[... ${leftOutBefore + text.length - start.length - end.length} characters left out ...]\n${end}`;
}

/** Longest display name, topic title or project name accepted, in characters. */
export const MAX_NAME_CHARS = 200;

export const MessageContentSchema = z
  .string({ error: 'content must be a string' })
  .max(MAX_MESSAGE_CHARS, `a message is longer than ${MAX_MESSAGE_CHARS} characters; split it into several messages`)
  .refine((text) => text.trim().length > 0, 'a message must not be empty');

export const MessageRoleSchema = z.enum(['user', 'assistant', 'system'], {
  error: 'role must be user, assistant or system',
});

const nameText = (name: string) =>
  z
    .string({ error: `${name} must be a string` })
    .trim()
    .min(1, `${name} must not be empty`)
    .max(MAX_NAME_CHARS, `${name} is longer than ${MAX_NAME_CHARS} characters`);

/**
 * A name a user goes by, shown before what they say in memories ("Oz: ..."): no line break, control or invisible
 * character and no colon (ADR 40).
 */
const personName = (name: string) =>
  nameText(name).superRefine((text, context) => {
    const problem = unfitName(text);
    if (problem) context.addIssue({ code: 'custom', message: `${name} ${problem}` });
  });

export const DisplayNameSchema = personName('displayName');

/** The earliest time accepted (`createdAt`, the `now` of maintenance): 1970-01-01T00:00:00.000Z. */
export const MIN_TIME = 0;
/** The latest time accepted: 9999-12-31T23:59:59.999Z. */
export const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An ISO 8601 date (`2024-06-15`, midnight UTC) or date and time with its offset (`2024-06-15T12:00:00Z`,
 * `2024-06-15T14:00:00.250+02:00`; `T`, `t` or a space between them; any digits of a second's fraction, kept to the
 * millisecond; 24:00:00 is the end of the day).
 */
const ISO_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/;

/**
 * Epoch milliseconds of `text`, or why it is no time mneme reads. `Date.parse` would not do: it takes February 30
 * for March 1, `"0"` for the year 2000 and `"foo 2024"` for 2024, and a time without an offset in the server's own
 * time zone, so one file imported on two machines would give two histories (attack 25, time).
 */
export function parseIsoTime(text: string): number | string {
  const match = ISO_TIME.exec(text);
  if (!match) return 'is not an ISO 8601 time';
  const [, year, month, day, hour, minute, second, fraction, utc, sign, offsetHours, offsetMinutes] = match;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  if (mo < 1 || mo > 12) return `has no month ${month}`;
  const monthDays = new Date(Date.UTC(2000, mo, 0)).getUTCDate() - (mo === 2 && !isLeapYear(y) ? 1 : 0);
  if (d < 1 || d > monthDays) return `has no day ${day} in month ${month} of ${year}`;
  if (hour === undefined || minute === undefined) return y < 1970 ? 'is before 1970' : Date.UTC(y, mo - 1, d);
  if (utc === undefined && sign === undefined) {
    return 'has no UTC offset: add Z for UTC or the offset, e.g. +02:00 (a time without one would be read in the time zone of whichever machine runs mneme)';
  }
  const h = Number(hour);
  const mi = Number(minute);
  const s = Number(second ?? 0);
  const ms = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  if (s === 60) return 'is a leap second (second 60), which epoch milliseconds cannot hold; give :59 instead';
  if (h > 24 || mi > 59 || s > 59 || (h === 24 && (mi > 0 || s > 0 || Number(fraction ?? 0) > 0))) {
    return `has no time of day ${hour}:${minute}${second === undefined ? '' : `:${second}`}`;
  }
  let offset = 0;
  if (sign !== undefined) {
    const oh = Number(offsetHours);
    const om = Number(offsetMinutes);
    if (oh > 23 || om > 59) return `has no UTC offset ${sign}${offsetHours}:${offsetMinutes}`;
    offset = (sign === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  // Years below 100 would be read as 19xx by `Date.UTC`; they are out of range anyway.
  if (y < 1000) return 'is before 1970';
  return Date.UTC(y, mo - 1, d, h, mi, s, ms) - offset;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * A point in time named `name`: ISO 8601 text with its UTC offset (`parseIsoTime`), whole epoch milliseconds or a
 * Date, from 1970 to the end of year 9999; becomes epoch milliseconds.
 */
export function timeSchema(name: string) {
  const expected = `${name} must be an ISO 8601 time or epoch milliseconds from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, e.g. 2024-06-15T12:00:00Z`;
  return z.union([z.number(), z.string(), z.date()], { error: expected }).transform((value, context) => {
    let time: number;
    if (typeof value === 'string') {
      const parsed = parseIsoTime(value);
      if (typeof parsed === 'string') {
        context.issues.push({
          code: 'custom',
          message: `${expected}; ${JSON.stringify(value.slice(0, 40))} ${parsed}`,
          input: value,
        });
        return z.NEVER;
      }
      time = parsed;
    } else if (typeof value === 'number') {
      if (Number.isFinite(value) && !Number.isInteger(value)) {
        context.issues.push({
          code: 'custom',
          message: `${expected}; ${value} is not whole epoch milliseconds`,
          input: value,
        });
        return z.NEVER;
      }
      time = value;
    } else {
      time = value.getTime();
    }
    if (!(Number.isFinite(time) && time >= MIN_TIME && time <= MAX_TIME)) {
      context.issues.push({ code: 'custom', message: expected, input: value });
      return z.NEVER;
    }
    return time;
  });
}

export const TimestampSchema = timeSchema('createdAt');

/** Versions after this one (0: from the first), for the next page of a history. */
export const VersionAfterSchema = wholeNumber('after');

/**
 * Input of `history`: a memory's versions after version `after`, oldest first, at most `limit` of them (1 to
 * `MAX_PAGE_SIZE`; every version when left out, as the library and the CLI read them; the HTTP API and MCP read a
 * page at a time, ADR 33).
 */
export const HistoryInputSchema = GetInputSchema.extend({
  after: VersionAfterSchema.optional(),
  limit: PageLimitSchema.optional(),
});
export type HistoryInput = z.input<typeof HistoryInputSchema>;

/** How many versions the HTTP API and MCP answer with when the request says no `limit`. */
export const HISTORY_PAGE = 100;

/** The page of a history as the query string gives it: `?after=<version>&limit=`, a viewer beside it. */
export const HistoryQuerySchema = ViewerSchema.extend({
  after: queryNumber('after', VersionAfterSchema).default(0),
  limit: queryNumber('limit', PageLimitSchema).default(HISTORY_PAGE),
});

/** Input of `ingest`: one message of a channel. Commands (`/remember`, `/forget`) in user messages are run. */
export const IngestInputSchema = z
  .strictObject({
    channelId: ChannelIdSchema,
    /** The sender's user id (the agent's id for an assistant message). */
    sender: SenderIdSchema,
    /** Sets the sender's display name, which extracted facts use ("Oz prefers ..."). */
    senderName: personName('senderName').optional(),
    role: MessageRoleSchema.default('user'),
    content: MessageContentSchema,
    /** When it was said; now when left out (set it to import history). */
    createdAt: TimestampSchema.optional(),
    /** The topic (session) it belongs to; created when it does not exist yet. */
    topicId: TopicIdSchema.optional(),
    /** The id of the message this one answers. */
    replyTo: MemoryIdSchema.optional(),
    /**
     * The chat platform's id of the message, unique per channel and sender: when the channel already has
     * a message of this sender with it, nothing is appended and that message comes back with
     * `duplicate: true`. Another sender's message under the same id is a message of its own.
     */
    externalId: MessageExternalIdSchema.optional(),
  })
  // One of mneme's own actors (ADR 38) sends only assistant replies, and has no display name a message could set:
  // a user message under `assistant` would take the external id a reply is looked up by.
  .superRefine((input, context) => {
    if (!isReservedId(input.sender)) return;
    if (input.role !== 'assistant') {
      context.addIssue({
        code: 'custom',
        path: ['sender'],
        message: `${reservedIdMessage('sender', input.sender)} (it sends only assistant replies)`,
      });
    }
    if (input.senderName !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['senderName'],
        message: `senderName names a user, and ${reservedIdMessage('sender', input.sender)}`,
      });
    }
  });
export type IngestInput = z.input<typeof IngestInputSchema>;

/** Input of `ingestExchange`: a user message and the assistant's reply, appended together. */
export const IngestExchangeInputSchema = z.strictObject({
  channelId: ChannelIdSchema,
  userId: PersonIdSchema,
  /** Sets the user's display name, which extracted facts use. */
  userName: personName('userName').optional(),
  userMessage: MessageContentSchema,
  assistantReply: MessageContentSchema,
  /** The sender id recorded for the reply. */
  assistantId: AssistantIdSchema.default(ASSISTANT_ID),
  createdAt: TimestampSchema.optional(),
  topicId: TopicIdSchema.optional(),
  /** The chat platform's id of the user message, unique per channel and sender (see `IngestInputSchema`). */
  externalId: MessageExternalIdSchema.optional(),
  /**
   * The chat platform's id of the reply. Without one, the reply of a user message already stored is a
   * duplicate when that message already has a reply from `assistantId`.
   */
  replyExternalId: externalId('replyExternalId').optional(),
});
export type IngestExchangeInput = z.input<typeof IngestExchangeInputSchema>;

/** A file's progress that `ingestMany` records with its inputs (`mneme ingest --resume`). */
export const IngestFileProgressSchema = z.strictObject({
  path: z.string({ error: 'path must be a string' }).min(1, 'path must not be empty').max(4096, 'path is too long'),
  line: z
    .number({ error: 'line must be a number' })
    .int('line must be a whole number')
    .positive('line must be positive'),
  prefixSha256: z.string().regex(/^[0-9a-f]{64}$/, 'prefixSha256 must be 64 lowercase hex digits'),
  after: z
    .number({ error: 'after must be a number' })
    .int('after must be a whole number')
    .min(0, 'after must not be negative')
    .optional(),
});

/** Input of `setDisplayName`. */
export const DisplayNameInputSchema = z.strictObject({ userId: PersonIdSchema, displayName: DisplayNameSchema });
export type DisplayNameInput = z.input<typeof DisplayNameInputSchema>;

/** Most members one call may name. */
export const MAX_MEMBERS = 10_000;

/** The users who belong to a channel, topic or project; when given, they replace its members. */
const MembersSchema = z
  .array(MemberIdSchema, { error: 'members must be a list of user ids' })
  .max(MAX_MEMBERS, `members names more than ${MAX_MEMBERS} users`);

/** Input of `createTopic`: a topic (a conversation session), optionally inside a project. */
export const CreateTopicInputSchema = z.strictObject({
  id: TopicIdSchema,
  projectId: ProjectIdSchema.optional(),
  title: nameText('title').optional(),
  members: MembersSchema.optional(),
});
export type CreateTopicInput = z.input<typeof CreateTopicInputSchema>;

/** Input of `createProject`. Work sessions are extracted only for managed projects. */
export const CreateProjectInputSchema = z.strictObject({
  id: ProjectIdSchema,
  name: nameText('name').optional(),
  managed: z.boolean({ error: 'managed must be true or false' }).default(false),
  members: MembersSchema.optional(),
});
export type CreateProjectInput = z.input<typeof CreateProjectInputSchema>;

/** Input of `putChannel`: who may read a channel (ADR 5). */
export const PutChannelInputSchema = z.strictObject({
  id: ChannelIdSchema,
  /**
   * `direct` (two parties), `private` (its members) or `public` (every user; facts may become global). Left out, a
   * declared channel keeps its own and a new one is private.
   */
  visibility: z
    .enum(['direct', 'private', 'public'], { error: 'visibility must be direct, private or public' })
    .optional(),
  members: MembersSchema.optional(),
});
export type PutChannelInput = z.input<typeof PutChannelInputSchema>;

/** How many of a channel's last messages `turns` returns: 1 to 50. */
const TurnsCountSchema = z
  .number({ error: 'count must be a whole number from 1 to 50' })
  .int('count must be a whole number from 1 to 50')
  .min(1, 'count must be at least 1')
  .max(50, 'count must be at most 50: turn memory keeps the last 50 turns');

/** Input of `turns`: the last `count` messages of a channel (at most 50; the policy's default when left out). */
export const TurnsInputSchema = z.strictObject({
  channelId: ChannelIdSchema,
  count: TurnsCountSchema.optional(),
});
export type TurnsInput = z.input<typeof TurnsInputSchema>;

/** The query of `GET /api/channels/{id}/turns?count=10`: digits for the count. */
export const TurnsQuerySchema = z.strictObject({
  count: queryNumber('count', TurnsCountSchema).optional(),
});
