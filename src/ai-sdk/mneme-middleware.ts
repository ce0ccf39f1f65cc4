import type { LanguageModelMiddleware } from 'ai';
import { z } from 'zod';
import { retryWhileBusy } from '../core/busy-retry.js';
import type { Logger } from '../core/engine-context.js';
import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import { clipQuery, fitMessage, PersonIdSchema, parseInput, TopKSchema, ViewerSchema } from '../core/schemas.js';
import type { Viewer } from '../core/types.js';
import { channelReadersSee, othersReadChannel, type Standing, standingIn } from '../core/visibility.js';
import {
  asksForTool,
  type CallOptions,
  isFinalReply,
  latestUserTurn,
  replyText,
  type StreamPart,
  type UserTurn,
  withContextBlock,
} from './ai-sdk-prompt.js';

/**
 * What the middleware asks of mneme: an engine from `createMneme`, or anything with the same three calls. A
 * user's view (`mneme.as(...)`) refuses `ingestExchange`: use it with `ingest: false`.
 */
export type MiddlewareMneme = Pick<Mneme, 'context' | 'ingestExchange' | 'channel'>;

/** Which step failed: the recall before the call, or the ingest after it. */
export type MiddlewarePhase = 'recall' | 'ingest';

export interface MnemeMiddlewareOptions {
  mneme: MiddlewareMneme;
  /**
   * On whose behalf memories are recalled, and where the exchange is recorded (`userId` and `channelId` are
   * needed to ingest). Each call may override it through `providerOptions: { mneme: { ... } }`; a call that
   * names another `userId` than this viewer's keeps none of this viewer's channel, topic or project. When the
   * exchange is recorded in a channel someone else reads (another member, or a public channel), the call recalls
   * only what that channel's readers see: its memories and global ones (ADR 47).
   */
  viewer?: Viewer;
  /** Memories in the block; the database policy's `context.topK` when left out. */
  topK?: number;
  /** Adds the channel's latest user messages to the query; the policy's `context.conversationAware` when left out. */
  conversationAware?: boolean;
  /** `false`: recall only, never record an exchange. On by default. */
  ingest?: boolean;
  /** Where warnings go (a failed recall or ingest): `console` when left out. Ignored when `onError` is given. */
  logger?: Logger;
  /** Called instead of the logger when a recall or an ingest fails; the user's call goes on either way. */
  onError?: (error: unknown, phase: MiddlewarePhase) => void;
}

/** The middleware, and a way to wait for the exchanges it is still recording. */
export type MnemeMiddleware = LanguageModelMiddleware & {
  /** Resolves when every ingest started so far has finished (before a serverless function returns, in tests). */
  settled(): Promise<void>;
};

const OptionsSchema = z.strictObject({
  mneme: z.custom<MiddlewareMneme>(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as Partial<MiddlewareMneme>).context === 'function' &&
      typeof (value as Partial<MiddlewareMneme>).ingestExchange === 'function' &&
      typeof (value as Partial<MiddlewareMneme>).channel === 'function',
    'mneme must be an engine from createMneme (an object with context, ingestExchange and channel)',
  ),
  viewer: ViewerSchema.optional(),
  topK: TopKSchema,
  conversationAware: z.boolean({ error: 'conversationAware must be true or false' }).optional(),
  ingest: z.boolean({ error: 'ingest must be true or false' }).optional(),
  logger: z
    .custom<Logger>(
      (value) => typeof value === 'object' && value !== null && typeof (value as Logger).warn === 'function',
      'logger must have a warn(message) method',
    )
    .optional(),
  onError: z
    .custom<MnemeMiddlewareOptions['onError']>((value) => typeof value === 'function', 'onError must be a function')
    .optional(),
});

/** What a call may set under `providerOptions.mneme`: the viewer's fields, and `ingest: false` for this call. */
const CallSettingsSchema = ViewerSchema.extend({
  ingest: z.boolean({ error: 'ingest must be true or false' }).optional(),
});

/** What the wrapped call needs after the model answers: who spoke, where, and what they said. */
interface CallPlan {
  turn: UserTurn;
  ingest: { userId: string; channelId: string; topicId: string | undefined } | null;
  /**
   * Whether the block holds a memory the channel's other readers may not see (the user's personal one, a project's
   * or a topic's): the reply is not recorded if the channel gained one while it was made.
   */
  beyondChannel: boolean;
  /** Where the user stood in the channel when the call came (null when it could not be read). */
  standing: Standing | null;
}

/**
 * A language-model middleware for the AI SDK 6 (`wrapLanguageModel({ model, middleware })`): before each
 * call, the context block for the latest user message goes into a system message of its own (after the
 * prompt's system messages); after a complete reply (generated or streamed to its end), the exchange is
 * ingested in the background. A failed recall or ingest is a warning, never a failed call (ADR 17).
 */
export function mnemeMiddleware(options: MnemeMiddlewareOptions): MnemeMiddleware {
  const settings = parseInput(OptionsSchema, options, 'mneme middleware options');
  const { mneme } = settings;
  const logger = settings.logger ?? console;
  const plans = new WeakMap<CallOptions, CallPlan>();
  const pending = new Set<Promise<void>>();

  const warn = (error: unknown, phase: MiddlewarePhase) => {
    try {
      if (settings.onError) settings.onError(error, phase);
      else
        logger.warn(
          phase === 'recall'
            ? `mneme: recall failed, the call goes on without memories: ${errorMessage(error)}`
            : `mneme: the exchange was not recorded: ${errorMessage(error)}`,
        );
    } catch {
      // A warning must never fail the user's call.
    }
  };

  /** The viewer and ingest setting of one call: the options', overridden by `providerOptions.mneme`. */
  const callSettings = (params: CallOptions) => {
    const own = parseInput(CallSettingsSchema, params.providerOptions?.mneme ?? {}, 'providerOptions.mneme');
    const { ingest = settings.ingest ?? true, ...fields } = own;
    // A call for another user than the default viewer's starts from nothing: the default user's channel,
    // topic and project are theirs, and recording there would make the other user a member of them.
    const defaults = settings.viewer ?? {};
    const otherUser = fields.userId !== undefined && defaults.userId !== undefined && fields.userId !== defaults.userId;
    const viewer: Viewer = otherUser ? { ...fields } : { ...defaults, ...fields };
    if (ingest && (viewer.userId === undefined || viewer.channelId === undefined)) {
      throw new MnemeError(
        ErrorCode.InvalidInput,
        'mneme middleware: recording the exchange needs a userId and a channelId (in the viewer option or providerOptions.mneme); give both, or set ingest: false',
      );
    }
    // One of mneme's own actors (`assistant`, ...; ADR 38) records no exchange: refused before the model is called,
    // not answered and then left out of memory with a warning.
    if (ingest) parseInput(PersonIdSchema, viewer.userId, 'mneme middleware viewer');
    return { viewer, ingest };
  };

  /** The channel's visibility and members, or null while it does not exist (its first exchange creates it). */
  const channelOf = async (channelId: string) => {
    try {
      return await mneme.channel(channelId);
    } catch (error) {
      if (isMnemeError(error) && error.code === ErrorCode.NotFound) return null;
      throw error;
    }
  };

  const record = (plan: CallPlan, reply: string) => {
    if (plan.ingest === null || reply.trim() === '') return;
    const { userId, channelId, topicId } = plan.ingest;
    const exchange = {
      userId,
      channelId,
      ...(topicId === undefined ? {} : { topicId }),
      // A turn longer than a message can hold keeps its start and its end rather than lose the exchange.
      userMessage: fitMessage(plan.turn.text),
      assistantReply: fitMessage(reply),
    };
    // The app has its reply and will not send the exchange again: a database another process holds is waited for,
    // and the channel looked at again after each wait.
    const work = retryWhileBusy(async () => {
      const channel = await channelOf(channelId);
      // The write makes the user a member: not again of a channel they were removed from while the reply came, nor of
      // one declared meanwhile without them (ADR 17, attack 32d).
      if (plan.standing !== null && plan.standing !== 'outsider' && standingIn(channel, userId) === 'outsider') {
        throw new MnemeError(
          ErrorCode.Forbidden,
          plan.standing === 'member'
            ? `user ${userId} is no longer a member of channel ${channelId}: removed while the reply came, the exchange is not recorded`
            : `channel ${channelId} was declared without user ${userId} while the reply came: the exchange is not recorded`,
        );
      }
      // A reply built on what the channel's readers may not see is not written where another reader came meanwhile
      // (ADR 47).
      if (plan.beyondChannel && othersReadChannel(channel, userId)) {
        throw new MnemeError(
          ErrorCode.Forbidden,
          `channel ${channelId} gained another reader while the reply came, built on memories its readers may not see (personal ones of user ${userId}, a project's or a topic's)`,
        );
      }
      return mneme.ingestExchange(exchange);
    }).then(
      () => undefined,
      (error: unknown) => warn(error, 'ingest'),
    );
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };

  return {
    specificationVersion: 'v3',

    async transformParams({ params }) {
      const { viewer, ingest } = callSettings(params);
      const turn = latestUserTurn(params.prompt);
      if (turn === null) return params;
      let block = '';
      let beyondChannel = false;
      let standing: Standing | null = null;
      const { userId, channelId, topicId } = viewer;
      const records = ingest && userId !== undefined && channelId !== undefined;
      try {
        // Recorded where others read, the reply may hold only what they may see: the channel's memories (ADR 47).
        const channel = records ? await channelOf(channelId) : null;
        if (records) standing = standingIn(channel, userId);
        const shared = records && othersReadChannel(channel, userId);
        const context = await mneme.context({
          query: clipQuery(turn.text, 'end'),
          viewer: shared ? { channelId } : viewer,
          ...(settings.topK === undefined ? {} : { topK: settings.topK }),
          ...(settings.conversationAware === undefined ? {} : { conversationAware: settings.conversationAware }),
          // A later step of a tool loop recalls for the same message: it looks without reinforcing again.
          inspect: !turn.last,
        });
        block = context.text;
        beyondChannel = context.hits.some(
          ({ memory }) => channelId === undefined || !channelReadersSee(memory, channelId),
        );
      } catch (error) {
        warn(error, 'recall');
      }
      const transformed: CallOptions =
        block === '' ? { ...params } : { ...params, prompt: withContextBlock(params.prompt, block) };
      plans.set(transformed, {
        turn,
        ingest: records ? { userId, channelId, topicId } : null,
        beyondChannel,
        standing,
      });
      return transformed;
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const plan = plans.get(params);
      const final = isFinalReply(result.finishReason) && !result.content.some(asksForTool);
      if (plan !== undefined && final && params.abortSignal?.aborted !== true) {
        record(plan, replyText(result));
      }
      return result;
    },

    async wrapStream({ doStream, params }) {
      const result = await doStream();
      const plan = plans.get(params);
      if (plan === undefined || plan.ingest === null) return result;
      let text = '';
      let finished = false;
      let failed = false;
      let callsTools = false;
      const collect = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          if (part.type === 'text-delta') text += part.delta;
          else if (part.type === 'finish') finished = isFinalReply(part.finishReason);
          else if (part.type === 'error') failed = true;
          else if (asksForTool(part)) callsTools = true;
          controller.enqueue(part);
        },
        // Only a stream read to its end gets here: an errored or cancelled one records nothing (ADR 17).
        flush() {
          if (finished && !failed && !callsTools && params.abortSignal?.aborted !== true) record(plan, text);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(collect) };
    },

    async settled() {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
}
