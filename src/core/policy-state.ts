import { z } from 'zod';
import type { PolicyStore, PolicyVersion } from '../storage/policy-store.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, isMnemeError, MnemeError } from './errors.js';
import { type MnemePolicy, type PolicyOptions, resolvePolicy } from './policy.js';
import { DEFAULT_PRESET, type PresetName, presetNames, presets } from './presets.js';
import { parseInput } from './schemas.js';

/** The policy a database runs under: its preset, what is changed on top of it, and the result. */
export interface PolicyState {
  preset: PresetName;
  /** The settings that differ from the preset, nested as in the policy. */
  overrides: PolicyOptions;
  /** The effective policy: the preset with the overrides, every default filled in. */
  policy: MnemePolicy;
  /** The stored version this state is (1 when the database was created). */
  version: number;
}

/** What a face asks for when it opens a database: a preset, settings, both or neither. */
export interface PolicyRequest {
  preset?: string | undefined;
  policy?: PolicyOptions | undefined;
}

const PresetNameSchema = z.enum(presetNames, {
  error: () => `preset must be one of ${presetNames.join(', ')}`,
});

/** A change of the stored policy: another preset, settings by dotted path (`recall.topK`: 8), or both. */
export const PolicyChangeSchema = z
  .strictObject({
    preset: PresetNameSchema.optional(),
    settings: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$/, 'a setting is a dotted path such as recall.topK'),
        z.unknown(),
        { error: 'settings must be an object of dotted paths and values' },
      )
      .default({}),
    /** Who makes the change (recorded in the policy history). */
    actor: z.string().max(200).optional(),
  })
  .refine((change) => change.preset !== undefined || Object.keys(change.settings).length > 0, {
    message: 'nothing to change: give a preset or at least one setting',
  });
export type PolicyChange = z.input<typeof PolicyChangeSchema>;

/**
 * INVALID_INPUT for a request that could not open any database (an unknown preset, settings that do not
 * fit it), so a face refuses it before it creates a file.
 */
export function checkPolicyRequest(request: PolicyRequest): void {
  const preset = parseInput(PresetNameSchema, request.preset ?? DEFAULT_PRESET, 'preset');
  resolvePolicy(merge(presets[preset].policy, request.policy ?? {}));
}

/** The change text of a version 1 nobody asked for: the default, stored by the first open. */
const UNASKED = 'created under the mneme preset (the default: nothing was asked for)';

/**
 * The policy the database runs under. A database without one (new, or from before presets) gets the
 * request's (the `mneme` preset when it asks for nothing) as version 1. A database with one answers
 * it, unless the request asks for something else: then CONFLICT, so no face silently runs another
 * policy than the one the database was built under. One exception: a default nobody asked for, in a
 * database that holds no memory and no message yet (a command run on a new file before `mneme init`),
 * gives way to the first request that asks for something.
 */
export async function openPolicy(store: PolicyStore, request: PolicyRequest, at: number): Promise<PolicyState> {
  const asked = request.preset !== undefined || request.policy !== undefined;
  for (;;) {
    const stored = await store.current();
    const preset = parseInput(PresetNameSchema, request.preset ?? DEFAULT_PRESET, 'preset');
    const policy = resolvePolicy(merge(presets[preset].policy, request.policy ?? {}));
    const overrides = policyOverrides(preset, policy);
    const change = !asked
      ? UNASKED
      : `created under the ${preset} preset${Object.keys(overrides).length > 0 ? ', with changed settings' : ''}`;
    const first = { version: 1, preset, overrides, change, actor: null };
    if (stored) {
      const state = stateOf(stored);
      const differs = asked && stored.version === 1 && stored.change === UNASKED && !sameRequest(state, request);
      if (differs && (await store.replaceUnusedFirst(first, at))) return { preset, overrides, policy, version: 1 };
      return checkRequest(state, request);
    }
    if (await store.append(first, at)) return { preset, overrides, policy, version: 1 };
  }
}

function sameRequest(state: PolicyState, request: PolicyRequest): boolean {
  try {
    checkRequest(state, request);
    return true;
  } catch {
    return false;
  }
}

/**
 * The state a stored version describes; STORE_INCOMPATIBLE for a preset or settings this mneme does
 * not know (a newer mneme wrote them).
 */
function stateOf(stored: PolicyVersion): PolicyState {
  const preset = presetNames.find((name) => name === stored.preset);
  if (!preset) {
    throw new MnemeError(
      ErrorCode.StoreIncompatible,
      `this database runs under the preset "${stored.preset}", which this mneme does not know (it knows ${presetNames.join(', ')}): upgrade mneme to open it`,
    );
  }
  const overrides = stored.overrides as PolicyOptions;
  try {
    return {
      preset,
      overrides,
      policy: resolvePolicy(merge(presets[preset].policy, overrides)),
      version: stored.version,
    };
  } catch (error) {
    throw new MnemeError(
      ErrorCode.StoreIncompatible,
      `the stored policy (version ${stored.version}) has settings this mneme cannot run (${error instanceof Error ? error.message : String(error)}): upgrade mneme to open it`,
      { cause: error },
    );
  }
}

/**
 * Applies a change to the stored policy and stores it as the next version: validated as a whole
 * (INVALID_INPUT names the setting), and CONFLICT when another process changed the policy meanwhile.
 */
export async function changePolicy(store: PolicyStore, input: PolicyChange, at: number): Promise<PolicyState> {
  const change = parseInput(PolicyChangeSchema, input, 'policy change');
  const stored = await store.current();
  const current = stored ? stateOf(stored) : await openPolicy(store, {}, at);
  const preset = change.preset ?? current.preset;
  const requested = merge(current.overrides, settingsToPolicy(change.settings));
  const policy = resolvePolicy(merge(presets[preset].policy, requested));
  const overrides = policyOverrides(preset, policy);
  // A change that changes nothing is not a version.
  if (preset === current.preset && JSON.stringify(policy) === JSON.stringify(current.policy)) return current;
  const words = [
    ...(preset === current.preset ? [] : [`preset ${current.preset} -> ${preset}`]),
    ...Object.entries(change.settings).map(([path, value]) => `${path} = ${JSON.stringify(value)}`),
  ];
  const next = {
    version: current.version + 1,
    preset,
    overrides,
    change: words.join('; '),
    actor: change.actor ?? null,
  };
  if (!(await store.append(next, at))) {
    throw new MnemeError(
      ErrorCode.Conflict,
      'the policy was changed by another process meanwhile: read it again and retry',
    );
  }
  return { preset, overrides, policy, version: next.version };
}

/** Settings by dotted path (`{ 'recall.topK': 8 }`) as nested policy options (`{ recall: { topK: 8 } }`). */
export function settingsToPolicy(settings: Record<string, unknown>): PolicyOptions {
  const paths = parseInput(PolicyChangeSchema.shape.settings, settings, 'settings');
  let policy: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(paths)) policy = setPath(policy, path.split('.'), value);
  return policy as PolicyOptions;
}

/** The settings of `policy` that differ from `preset`'s, nested as in the policy. */
function policyOverrides(preset: PresetName, policy: MnemePolicy): PolicyOptions {
  return (difference(policy, resolvePolicy(presets[preset].policy)) ?? {}) as PolicyOptions;
}

/**
 * The stored policy, made the engine's: another process may have changed it (`mneme policy set`). An
 * engine over a database with none yet stores its own as version 1.
 */
export async function loadPolicy(store: PolicyStore, current: MnemePolicy, at: number): Promise<PolicyState> {
  const stored = await store.current();
  return stored ? stateOf(stored) : openPolicy(store, { policy: current }, at);
}

/**
 * Makes the stored policy the engine's, when it can: a policy this mneme cannot run (a newer mneme
 * wrote it) is reported as a warning and the engine keeps the one it runs, so a running service keeps
 * working.
 */
export async function refreshPolicy(context: EngineContext): Promise<void> {
  try {
    context.policy = (await loadPolicy(context.storage.policy, context.policy, context.clock.now())).policy;
  } catch (error) {
    if (!isMnemeError(error, ErrorCode.StoreIncompatible)) throw error;
    context.logger.warn(`keeping the policy this engine runs: ${error.message}`);
  }
}

/** CONFLICT when the request asks for another preset or for settings that differ from the stored ones. */
function checkRequest(state: PolicyState, request: PolicyRequest): PolicyState {
  const refuse = (asked: string): never => {
    throw new MnemeError(
      ErrorCode.Conflict,
      `this database runs under the ${state.preset} preset${state.version > 1 ? ` (policy version ${state.version})` : ''}, but ${asked}: open it without a preset or policy to use its own, or change it with \`mneme policy set\` (setPolicy in the library)`,
    );
  };
  if (request.preset !== undefined && request.preset !== state.preset)
    refuse(`the ${request.preset} preset was asked for`);
  if (request.policy !== undefined) {
    const asked = resolvePolicy(merge(merge(presets[state.preset].policy, state.overrides), request.policy));
    const differs = difference(asked, state.policy);
    if (differs) {
      const [path, value] = firstLeaf(differs);
      refuse(
        `the options ask for ${path} = ${JSON.stringify(value)} (it is ${JSON.stringify(readPath(state.policy, path))})`,
      );
    }
  }
  return state;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `over` laid on `base`: records merge key by key, anything else (arrays, templates over names) replaces. */
function merge(base: unknown, over: unknown): Record<string, unknown> {
  if (!isRecord(base) || !isRecord(over)) return (over ?? base) as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    // Defined, not assigned: a key "__proto__" (from JSON) stays an own field, which the schema refuses.
    const inner = Object.hasOwn(base, key) ? base[key] : undefined;
    Object.defineProperty(merged, key, {
      value: isRecord(value) && isRecord(inner) ? merge(inner, value) : value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return merged;
}

/** What of `value` differs from `reference`, nested; undefined when nothing does. */
function difference(value: unknown, reference: unknown): unknown {
  if (isRecord(value) && isRecord(reference)) {
    const entries = Object.entries(value).flatMap(([key, inner]) => {
      const differs = difference(inner, reference[key]);
      return differs === undefined ? [] : [[key, differs] as const];
    });
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  }
  return JSON.stringify(value) === JSON.stringify(reference) ? undefined : value;
}

function firstLeaf(value: unknown, path: string[] = []): [string, unknown] {
  if (isRecord(value)) {
    const [key, inner] = Object.entries(value)[0] ?? [];
    if (key !== undefined) return firstLeaf(inner, [...path, key]);
  }
  return [path.join('.'), value];
}

function readPath(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((inner, key) => (isRecord(inner) ? inner[key] : undefined), value);
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const [key, ...rest] = path;
  if (key === undefined) return target;
  const inner = target[key];
  return { ...target, [key]: rest.length === 0 ? value : setPath(isRecord(inner) ? inner : {}, rest, value) };
}
