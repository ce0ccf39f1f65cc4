import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli } from './cli-harness.js';

/** One line of an export file, as the tests of a crafted import read and change it. */
export type ExportRecord = { type: string; [field: string]: unknown };

/** The records of an export file, the end line included. */
export function readExport(path: string): ExportRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ExportRecord);
}

/** Exports `source` with `mneme export --out <file>` and returns the file's records. */
export async function exportRecords(source: string, file: string): Promise<ExportRecord[]> {
  const exported = await runCli(source, ['export', '--out', file]);
  expect(exported.code, exported.stderr).toBe(0);
  return readExport(file);
}

/** `records` (any end line left out) written as `folder/name`, with an end line that counts them again. */
export function writeExportFile(folder: string, name: string, records: readonly ExportRecord[]): string {
  const body = records.filter((record) => record.type !== 'end');
  const path = join(folder, name);
  writeFileSync(
    path,
    `${[...body, { type: 'end', records: body.length - 1 }].map((record) => JSON.stringify(record)).join('\n')}\n`,
  );
  return path;
}

/**
 * Imports `file` into `target` with `mneme import` and checks the refusal: exit 2, one line `mneme: line <n>: ...`
 * matching `message` and ending with `ending` (no stack trace), and nothing imported.
 */
export async function expectImportRefused(
  target: string,
  file: string,
  message: RegExp,
  ending = /; nothing was imported\n$/,
): Promise<void> {
  const imported = await runCli(target, ['import', file]);
  expect(imported.code, `${file}: ${imported.stderr}`).toBe(2);
  expect(imported.stderr).toMatch(/^mneme: line \d+: /);
  expect(imported.stderr).toMatch(message);
  expect(imported.stderr).toMatch(ending);
  expect(imported.stderr.split('\n')).toHaveLength(2);
  expect((await runCli(target, ['--json', 'stats'])).stdout).toMatch(/"total": ?0/);
}

/**
 * The records of an export with every message and memory id replaced by its position among the rows of its kind (1,
 * 2, ...), every reference by the same number, and the header's time left out: two exports of the same data compare
 * equal, whatever ids the databases gave.
 */
export function normaliseExport(lines: readonly string[]): ExportRecord[] {
  const parsed = lines.map((line) => JSON.parse(line) as ExportRecord);
  const messageIds = new Map<number, number>();
  const memoryIds = new Map<number, number>();
  for (const line of parsed) {
    if (line.type === 'message') messageIds.set(line.id as number, messageIds.size + 1);
    if (line.type === 'memory') memoryIds.set(line.id as number, memoryIds.size + 1);
  }
  const message = (id: unknown) => (id === null ? null : (messageIds.get(id as number) ?? `missing ${id}`));
  const memory = (id: unknown) => (id === null ? null : (memoryIds.get(id as number) ?? `missing ${id}`));
  return parsed.map((line) => {
    switch (line.type) {
      case 'header':
        return { ...line, exportedAt: 'normalised' };
      case 'message':
        return { ...line, id: message(line.id), replyTo: message(line.replyTo) };
      case 'memory': {
        const chunk = line.chunk as { messageId: number; index: number } | null;
        return {
          ...line,
          id: memory(line.id),
          supersededBy: memory(line.supersededBy),
          sourceIds: (line.sourceIds as number[]).map(memory),
          sourceMessageIds: (line.sourceMessageIds as number[]).map(message),
          searchContextMessageId: message(line.searchContextMessageId),
          chunk: chunk ? { ...chunk, messageId: message(chunk.messageId) } : null,
        };
      }
      case 'link':
        return { ...line, sourceId: memory(line.sourceId), targetId: memory(line.targetId) };
      case 'watermark':
        return { ...line, watermark: line.channelId === '' ? memory(line.watermark) : message(line.watermark) };
      default:
        return line;
    }
  });
}
