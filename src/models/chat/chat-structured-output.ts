import { z } from 'zod';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { refusesInput } from '../provider-http.js';

/** What to ask a chat model for: a zod schema (sent as JSON Schema, and checked), a name and the prompt. */
export interface StructuredRequest<Schema extends z.ZodType> {
  schema: Schema;
  /** Names the schema for the provider (OpenAI's `json_schema.name`): letters, digits, `_` and `-`. */
  name: string;
  messages: readonly ChatMessage[];
  /** 0 unless told otherwise. */
  temperature?: number;
}

/**
 * A model reply read against a schema: the value, or what is wrong with it (said so the model can fix it); `refused`
 * when the provider refused the request's input itself (`refusesInput`: longer than its context, say), the problem
 * then being its error.
 */
export type StructuredReading<T> = { ok: true; value: T } | { ok: false; problem: string; refused?: true };

/**
 * Asks `model` for JSON matching `request.schema` and returns the validated value. Small local models
 * do not always comply, so a reply is repaired where that is safe (code fences, prose around the JSON,
 * trailing commas, a single object where an array belongs); a reply that still does not fit is sent
 * back once with what is wrong; a second bad reply throws MODEL_FAILED.
 */
export async function completeStructured<Schema extends z.ZodType>(
  model: ChatModel,
  request: StructuredRequest<Schema>,
  options: { signal?: AbortSignal } = {},
): Promise<z.output<Schema>> {
  const reading = await askStructured(model, request, options);
  if (reading.ok) return reading.value;
  throw new MnemeError(ErrorCode.ModelFailed, unusableReplyMessage(model, request, reading));
}

/** What `completeStructured` says when the model's replies could not be used twice, or its input was refused. */
export function unusableReplyMessage(
  model: ChatModel,
  request: { name: string },
  reading: { problem: string; refused?: true },
): string {
  return reading.refused
    ? `${model.modelId} refused the request for ${request.name} (${reading.problem}); it would refuse it again`
    : `${model.modelId} returned unusable JSON for ${request.name} twice (${reading.problem}); a larger model may do better`;
}

/**
 * `completeStructured`, with two unusable replies answered as what was wrong with the second rather than thrown:
 * for a caller to whom the same input would give the same unusable reply again (temperature 0). So is a provider's
 * refusal of the input (`refusesInput`: 400, 413, 422). A failure of the model itself (unreachable, an outage, a key
 * refused, a model missing) still throws MODEL_FAILED.
 */
export async function askStructured<Schema extends z.ZodType>(
  model: ChatModel,
  request: StructuredRequest<Schema>,
  options: { signal?: AbortSignal } = {},
): Promise<StructuredReading<z.output<Schema>>> {
  const jsonSchema = toJsonSchema(request.schema);
  const messages: ChatMessage[] = [...request.messages];
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    let reply: string;
    try {
      reply = await model.complete(
        { messages, jsonSchema: { name: request.name, schema: jsonSchema }, temperature: request.temperature ?? 0 },
        options.signal ? { signal: options.signal } : {},
      );
    } catch (error) {
      if (!refusesInput(error)) throw error;
      return { ok: false, problem: errorMessage(error), refused: true };
    }
    const reading = readStructured(reply, request.schema);
    if (reading.ok) return reading;
    problem = reading.problem;
    messages.push(
      { role: 'assistant', content: reply },
      {
        role: 'user',
        content: `That reply could not be used: ${problem}. Reply again with only the JSON value, matching the schema, and nothing else.`,
      },
    );
  }
  return { ok: false, problem };
}

/** The JSON Schema sent to the provider for a zod schema (input side: fields with defaults are optional). */
export function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return jsonSchema;
}

/** Reads a model's reply as `schema`, repairing what can safely be repaired. */
export function readStructured<Schema extends z.ZodType>(
  text: string,
  schema: Schema,
): StructuredReading<z.output<Schema>> {
  const json = extractJson(text);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    try {
      value = JSON.parse(removeTrailingCommas(json));
    } catch (error) {
      const reason = errorMessage(error);
      return { ok: false, problem: `it is not valid JSON (${reason})` };
    }
  }
  let result = schema.safeParse(value);
  for (let repairs = 0; !result.success && repairs < 3; repairs++) {
    const repaired = repairShape(value, result.error.issues, schema);
    if (repaired === undefined) break;
    value = repaired;
    result = schema.safeParse(value);
  }
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    problem: `it does not match the schema: ${result.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length ? issue.path.join('.') : 'the value'}: ${issue.message}`)
      .join('; ')}`,
  };
}

/** The JSON inside a reply: without code fences, and without prose before the first `{`/`[` or after the last `}`/`]`. */
function extractJson(text: string): string {
  let json = text.trim();
  const fenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(json);
  if (fenced?.[1] !== undefined) json = fenced[1].trim();
  const start = json.search(/[[{]/);
  const end = Math.max(json.lastIndexOf('}'), json.lastIndexOf(']'));
  if (start > 0 || (end !== -1 && end < json.length - 1)) {
    if (start !== -1 && end > start) json = json.slice(start, end + 1);
  }
  return json;
}

/** Drops commas that stand right before a `}` or `]`, outside strings. */
function removeTrailingCommas(json: string): string {
  let output = '';
  let isInString = false;
  for (let index = 0; index < json.length; index++) {
    const character = json[index];
    if (isInString) {
      output += character;
      if (character === '\\') {
        output += json[index + 1] ?? '';
        index++;
      } else if (character === '"') {
        isInString = false;
      }
      continue;
    }
    if (character === '"') isInString = true;
    if (character === ',' && /^\s*[}\]]/.test(json.slice(index + 1))) continue;
    output += character;
  }
  return output;
}

/**
 * One shape repair, or undefined when none applies: an object where an array is expected becomes a
 * one-item array; a bare array where the schema wants an object with one array field is put in that field.
 */
function repairShape(value: unknown, issues: readonly z.core.$ZodIssue[], schema: z.ZodType): unknown {
  for (const issue of issues) {
    if (issue.code !== 'invalid_type') continue;
    if (issue.expected === 'array') {
      const target = valueAt(value, issue.path);
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
        return replaceAt(value, issue.path, [target]);
      }
    }
    if (issue.expected === 'object' && issue.path.length === 0 && Array.isArray(value)) {
      const field = singleArrayField(schema);
      if (field !== undefined) return { [field]: value };
    }
  }
  return undefined;
}

function singleArrayField(schema: z.ZodType): string | undefined {
  if (!(schema instanceof z.ZodObject)) return undefined;
  const arrayFields = Object.entries(schema.shape as Record<string, z.ZodType>).filter(([, field]) =>
    isArraySchema(field),
  );
  return arrayFields.length === 1 ? arrayFields[0]?.[0] : undefined;
}

function isArraySchema(schema: z.ZodType): boolean {
  if (schema instanceof z.ZodArray) return true;
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional) {
    return isArraySchema(schema.unwrap() as z.ZodType);
  }
  return false;
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function replaceAt(value: unknown, path: readonly PropertyKey[], replacement: unknown): unknown {
  const [key, ...rest] = path;
  if (key === undefined) return replacement;
  const container = value as Record<PropertyKey, unknown>;
  const replaced = replaceAt(container[key], rest, replacement);
  if (Array.isArray(container)) return container.map((item, index) => (index === Number(key) ? replaced : item));
  return { ...container, [key]: replaced };
}
