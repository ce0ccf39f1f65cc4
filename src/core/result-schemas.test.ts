import { describe, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { Mneme } from './mneme.js';
import type {
  AnalyticsSeriesSchema,
  ChannelSchema,
  ChannelSummarySchema,
  ContextResultSchema,
  IngestBatchResultSchema,
  IngestResultSchema,
  MaintenanceReportSchema,
  MaintenanceStatusSchema,
  MemoryLinkSchema,
  MemoryPageSchema,
  MemorySchema,
  MemoryStatsSchema,
  MemoryVersionSchema,
  MessagePageSchema,
  MessageSchema,
  PolicyStateSchema,
  ProjectSchema,
  PurgeReportSchema,
  RecallResultSchema,
  TopicExtractionReportSchema,
  TopicSchema,
  UserSchema,
  WorkExtractionReportSchema,
} from './result-schemas.js';

/** A type with its intersections merged into plain objects, so equal shapes compare equal however they are written. */
type Plain<T> = T extends readonly (infer Item)[]
  ? Plain<Item>[]
  : T extends object
    ? { [Key in keyof T]: Plain<T[Key]> }
    : T;

/** What an engine method resolves to. */
type Returned<Method extends keyof Mneme> = Plain<
  Mneme[Method] extends (...args: never[]) => Promise<infer Result> ? Result : never
>;

/** The type a schema describes. */
type Described<Schema extends z.ZodType> = Plain<z.output<Schema>>;

// These checks run in the compiler (`npm run typecheck`): a field added to, removed from or retyped in what the
// engine returns, without the same change in its schema (or the other way round), fails to compile.
describe('the result schemas', () => {
  it('describe exactly what the memory methods return', () => {
    expectTypeOf<Described<typeof MemorySchema>>().toEqualTypeOf<Returned<'remember'>>();
    expectTypeOf<Described<typeof MemorySchema>>().toEqualTypeOf<Returned<'get'>>();
    expectTypeOf<Described<typeof MemoryPageSchema>>().toEqualTypeOf<Returned<'list'>>();
    expectTypeOf<Described<typeof MemoryVersionSchema>[]>().toEqualTypeOf<Returned<'history'>>();
    expectTypeOf<Described<typeof MemoryLinkSchema>[]>().toEqualTypeOf<Returned<'links'>>();
    expectTypeOf<Described<typeof PurgeReportSchema>>().toEqualTypeOf<Returned<'purgeUser'>>();
    expectTypeOf<Described<typeof MemoryStatsSchema>>().toEqualTypeOf<Returned<'stats'>>();
    // @ts-expect-error a description that lacks one field of what the engine returns is not equal to it
    expectTypeOf<Described<typeof MemorySchema>>().toEqualTypeOf<Plain<Returned<'get'> & { extra: string }>>();
  });

  it('describe exactly what recall and context return', () => {
    expectTypeOf<Described<typeof RecallResultSchema>>().toEqualTypeOf<Returned<'recall'>>();
    expectTypeOf<Described<typeof ContextResultSchema>>().toEqualTypeOf<Returned<'context'>>();
  });

  it('describe exactly what ingest, extraction, turns and maintenance return', () => {
    expectTypeOf<Described<typeof IngestResultSchema>>().toEqualTypeOf<Returned<'ingest'>>();
    expectTypeOf<Described<typeof IngestResultSchema>>().toEqualTypeOf<Returned<'ingestExchange'>>();
    expectTypeOf<Described<typeof IngestBatchResultSchema>['results']>().toEqualTypeOf<Returned<'ingestMany'>>();
    expectTypeOf<Described<typeof MessageSchema>[]>().toEqualTypeOf<Returned<'turns'>>();
    expectTypeOf<Described<typeof TopicExtractionReportSchema>>().toEqualTypeOf<Returned<'extract'>>();
    expectTypeOf<Described<typeof WorkExtractionReportSchema>>().toEqualTypeOf<Returned<'extractWork'>>();
    expectTypeOf<Described<typeof MaintenanceReportSchema>>().toEqualTypeOf<Returned<'maintain'>>();
  });

  it("describe exactly what the inspector's reads return", () => {
    expectTypeOf<Described<typeof MessageSchema>[]>().toEqualTypeOf<Returned<'sources'>>();
    expectTypeOf<Described<typeof ChannelSummarySchema>[]>().toEqualTypeOf<Returned<'channels'>>();
    expectTypeOf<Described<typeof MessagePageSchema>>().toEqualTypeOf<Returned<'messages'>>();
    expectTypeOf<Described<typeof MaintenanceStatusSchema>>().toEqualTypeOf<Returned<'maintenanceStatus'>>();
    expectTypeOf<Described<typeof AnalyticsSeriesSchema>>().toEqualTypeOf<Returned<'analytics'>>();
  });

  it('describe exactly what the directory methods return', () => {
    expectTypeOf<Described<typeof UserSchema>>().toEqualTypeOf<Returned<'setDisplayName'>>();
    expectTypeOf<Described<typeof TopicSchema>>().toEqualTypeOf<Returned<'createTopic'>>();
    expectTypeOf<Described<typeof ProjectSchema>>().toEqualTypeOf<Returned<'createProject'>>();
    expectTypeOf<Described<typeof ChannelSchema>>().toEqualTypeOf<Returned<'putChannel'>>();
    expectTypeOf<Described<typeof ChannelSchema>>().toEqualTypeOf<Returned<'channel'>>();
  });

  it('describe the policy state, its overrides as a plain object', () => {
    // `overrides` is the policy's input type (every setting optional, nested); the document gives it as an object.
    expectTypeOf<Returned<'policy'>>().toExtend<Described<typeof PolicyStateSchema>>();
    // @ts-expect-error the whole state differs from its description in `overrides` alone
    expectTypeOf<Described<typeof PolicyStateSchema>>().toEqualTypeOf<Returned<'policy'>>();
    expectTypeOf<Omit<Described<typeof PolicyStateSchema>, 'overrides'>>().toEqualTypeOf<
      Omit<Returned<'policy'>, 'overrides'>
    >();
  });
});
