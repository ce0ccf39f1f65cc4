import { z } from 'zod';
import { ErrorCode, type FieldIssue, MnemeError } from './errors.js';
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
export const ChannelIdSchema = externalId('channelId');
export const ProjectIdSchema = externalId('projectId');
export const TopicIdSchema = externalId('topicId');

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

/** Input of `remember`: a manual memory. */
export const RememberInputSchema = z
  .strictObject({
    content: ContentSchema,
    scope: ScopeSchema.default('global'),
    ...ownerIds,
    category: CategorySchema.default('general'),
    importance: ImportanceSchema.default(0.5),
    pinned: z.boolean({ error: 'pinned must be true or false' }).default(false),
    actor: ActorSchema.optional(),
  })
  .superRefine((input, context) => {
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
  });
export type RememberInput = z.input<typeof RememberInputSchema>;

/** Input of `update`: at least one field to change. */
export const UpdateInputSchema = z
  .strictObject({
    id: MemoryIdSchema,
    content: ContentSchema.optional(),
    category: CategorySchema.optional(),
    importance: ImportanceSchema.optional(),
    pinned: z.boolean({ error: 'pinned must be true or false' }).optional(),
    actor: ActorSchema.optional(),
    reason: z.string().trim().max(500).optional(),
  })
  .refine(
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
  actor: ActorSchema.optional(),
  reason: z.string().trim().max(500).optional(),
});
export type MemoryActionInput = z.input<typeof MemoryActionInputSchema>;

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
  limit: z.coerce
    .number({ error: 'limit must be a number' })
    .int('limit must be a whole number')
    .min(1, 'limit must be at least 1')
    .max(MAX_PAGE_SIZE, `limit must be at most ${MAX_PAGE_SIZE}`)
    .default(50),
  offset: z.coerce
    .number({ error: 'offset must be a number' })
    .int('offset must be a whole number')
    .min(0, 'offset must not be negative')
    .default(0),
});
export type ListFilter = z.input<typeof ListFilterSchema>;
export type ParsedListFilter = z.output<typeof ListFilterSchema>;

/**
 * Parses `input` with `schema`, or throws an INVALID_INPUT MnemeError that names every invalid field.
 * Every face calls this with the same schema, so the same input is refused the same way everywhere.
 */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown, what = 'input'): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues: FieldIssue[] = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join('.'),
    message: unrecognisedKeysMessage(issue) ?? issue.message,
  }));
  const summary = issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join('; ');
  throw new MnemeError(ErrorCode.InvalidInput, `invalid ${what}: ${summary}`, { issues });
}

function unrecognisedKeysMessage(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code !== 'unrecognized_keys') return undefined;
  return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
}
