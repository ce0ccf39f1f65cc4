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

/** The faces: thin layers over the engine (the AI SDK middleware is one too). */
const faces = ['cli', 'http', 'mcp', 'ai-sdk', 'proxy'];

/** The AI SDK's packages: an optional peer dependency, imported only by the `mneme/ai-sdk` entry and its folder. */
const aiSdkPackage = /^(ai|@ai-sdk\/[a-z-]+)(\/.*)?$/;
const aiSdkHome = /^src\/(ai-sdk\/[a-z-]+|ai-sdk)\.ts$/;

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

/**
 * The imports of `file` that break the AI SDK's rule: outside its home any import of it; inside, a value
 * import (only types, so the built JavaScript needs no `ai` beyond what the app already has).
 */
function forbiddenAiSdkImports(file: string, code: string): string[] {
  const atHome = aiSdkHome.test(file);
  const typeOnly = [...code.matchAll(/^import\s+type\s[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((match) => match[1]);
  const allowed = atHome ? [...typeOnly] : [];
  return importsOf(code).flatMap((specifier) => {
    if (!aiSdkPackage.test(specifier)) return [];
    const typeImport = allowed.indexOf(specifier);
    if (typeImport === -1) return [`${file} imports ${specifier}`];
    allowed.splice(typeImport, 1);
    return [];
  });
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

  it('keeps the AI SDK inside src/ai-sdk/ and src/ai-sdk.ts, and imports only its types there', () => {
    expect(violationsUnder('.', forbiddenAiSdkImports)).toEqual([]);
  });

  it('would notice the AI SDK imported outside its folder, or for a value inside it', () => {
    const code = [
      "import type { LanguageModelMiddleware } from 'ai';",
      "import { wrapLanguageModel } from 'ai';",
      "import type { LanguageModelV3 } from '@ai-sdk/provider';",
      "import { MockLanguageModelV3 } from 'ai/test';",
    ].join('\n');
    expect(forbiddenAiSdkImports('src/core/example.ts', code)).toEqual([
      'src/core/example.ts imports ai',
      'src/core/example.ts imports ai',
      'src/core/example.ts imports @ai-sdk/provider',
      'src/core/example.ts imports ai/test',
    ]);
    expect(forbiddenAiSdkImports('src/ai-sdk/example.ts', code)).toEqual([
      'src/ai-sdk/example.ts imports ai',
      'src/ai-sdk/example.ts imports ai/test',
    ]);
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
