import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const source = resolve(import.meta.dirname, '../src');

/** What core/ may import: itself, the port files, zod and node:crypto. Adapters, drivers and faces are refused. */
const allowedFromCore = [
  /^src\/core\//,
  /^src\/storage\/[a-z-]+-store\.ts$/,
  /^src\/models\/(embedding|chat)-model\.ts$/,
  /^zod$/,
  /^node:crypto$/,
];

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function importsOf(code: string): string[] {
  const specifiers = [...code.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g)].map((match) => match[1]);
  const dynamic = [...code.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((match) => match[1]);
  const bare = [...code.matchAll(/^import\s+['"]([^'"]+)['"]/gm)].map((match) => match[1]);
  return [...specifiers, ...dynamic, ...bare].filter((specifier): specifier is string => specifier !== undefined);
}

/** The imports of `file` (path relative to the repo) that core/ must not have. */
function forbiddenImports(file: string, code: string): string[] {
  return importsOf(code).flatMap((specifier) => {
    const target = specifier.startsWith('.')
      ? relative(resolve(source, '..'), resolve(source, '..', file, '..', specifier)).replace(/\.js$/, '.ts')
      : specifier;
    return allowedFromCore.some((pattern) => pattern.test(target)) ? [] : [`${file} imports ${specifier}`];
  });
}

describe('the architecture', () => {
  it('keeps core/ free of adapters, drivers and faces', () => {
    const violations = filesUnder(join(source, 'core')).flatMap((file) =>
      forbiddenImports(relative(resolve(source, '..'), file), readFileSync(file, 'utf8')),
    );
    expect(violations).toEqual([]);
  });

  it('would notice core importing a driver, an adapter or a face', () => {
    const code = [
      "import Database from 'better-sqlite3';",
      "import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';",
      "import { main } from '../cli/cli-main.js';",
      "const lazy = await import('node:http');",
      "import type { Storage } from '../storage/memory-store.js';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(forbiddenImports('src/core/example.ts', code)).toEqual([
      'src/core/example.ts imports better-sqlite3',
      'src/core/example.ts imports ../storage/sqlite/sqlite-storage.js',
      'src/core/example.ts imports ../cli/cli-main.js',
      'src/core/example.ts imports node:http',
    ]);
  });
});
