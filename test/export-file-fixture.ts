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
