import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const source = resolve(import.meta.dirname, '../src');

/** What core/ may import: itself, the port files, zod and node:crypto. Adapters, drivers and faces are refused. */
const allowedFromCore = [
  /^src\/core\//,
  /^src\/storage\/([a-z-]+-store|storage)\.ts$/,
  /^src\/models\/(embedding|chat)-model\.ts$/,
  /^zod$/,
  /^node:crypto$/,
];

/** What a face may not import: a storage adapter or a vendor's model adapter (config/ picks those). */
const refusedFromFaces = [/^src\/storage\/[a-z-]+\//, /^src\/models\/[a-z-]+\//, /^better-sqlite3$/, /^sqlite-vec$/];

/** The faces: thin layers over the engine. */
const faces = ['cli', 'http', 'mcp', 'proxy'];

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

/** Where an import of `file` (path relative to the repo) points: a repo path for relative imports, else the package. */
function importTargets(file: string, code: string): Array<{ specifier: string; target: string }> {
  return importsOf(code).map((specifier) => ({
    specifier,
    target: specifier.startsWith('.')
      ? relative(resolve(source, '..'), resolve(source, '..', file, '..', specifier)).replace(/\.js$/, '.ts')
      : specifier,
  }));
}

/** The imports of `file` that core/ must not have. */
function forbiddenImports(file: string, code: string): string[] {
  return importTargets(file, code).flatMap(({ specifier, target }) =>
    allowedFromCore.some((pattern) => pattern.test(target)) ? [] : [`${file} imports ${specifier}`],
  );
}

/** The imports of `file` that a face must not have. */
function forbiddenFaceImports(file: string, code: string): string[] {
  return importTargets(file, code).flatMap(({ specifier, target }) =>
    refusedFromFaces.some((pattern) => pattern.test(target)) ? [`${file} imports ${specifier}`] : [],
  );
}

function violationsUnder(folder: string, check: (file: string, code: string) => string[]): string[] {
  return filesUnder(join(source, folder)).flatMap((file) =>
    check(relative(resolve(source, '..'), file), readFileSync(file, 'utf8')),
  );
}

describe('the architecture', () => {
  it('keeps core/ free of adapters, drivers and faces', () => {
    expect(violationsUnder('core', forbiddenImports)).toEqual([]);
  });

  it('groups core/ by use case', () => {
    const folders = readdirSync(join(source, 'core'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect(folders).toEqual(['decay', 'ingest', 'maintenance', 'ports', 'recall', 'transfer']);
  });

  it('keeps the faces off storage and model adapters', () => {
    expect(faces.flatMap((face) => violationsUnder(face, forbiddenFaceImports))).toEqual([]);
  });

  it('would notice a face importing a storage or model adapter', () => {
    const code = [
      "import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';",
      "import { createOllamaEmbeddingModel } from '../models/ollama/ollama-embedding-model.js';",
      "import Database from 'better-sqlite3';",
      "import type { Storage } from '../storage/storage.js';",
      "import { createMneme } from '../config/create-mneme.js';",
    ].join('\n');
    expect(forbiddenFaceImports('src/http/example.ts', code)).toEqual([
      'src/http/example.ts imports ../storage/sqlite/sqlite-storage.js',
      'src/http/example.ts imports ../models/ollama/ollama-embedding-model.js',
      'src/http/example.ts imports better-sqlite3',
    ]);
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
