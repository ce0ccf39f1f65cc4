import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');

/** The names a package entry exports, read by a plain Node process through the package's own name. */
function exportsOf(entry: string): string[] {
  const script = `const module = await import(${JSON.stringify(entry)}); console.log(JSON.stringify(Object.keys(module).sort()));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  return JSON.parse(output) as string[];
}

describe('the package entries', () => {
  it('keeps the engine, its errors and the scheduler at the root, and no face or provider', () => {
    const names = exportsOf('mneme');
    expect(names).toEqual(
      expect.arrayContaining(['createMneme', 'MnemeError', 'ErrorCode', 'createMaintenanceScheduler']),
    );
    expect(names).not.toContain('createHttpApp');
    expect(names).not.toContain('createOllamaEmbeddingModel');
  });

  it('serves the HTTP face from mneme/http', () => {
    expect(exportsOf('mneme/http')).toEqual(['createHttpApp', 'startHttpServer']);
  });

  it('serves the AI SDK middleware from mneme/ai-sdk', () => {
    expect(exportsOf('mneme/ai-sdk')).toEqual(['mnemeMiddleware']);
  });

  it('serves the model providers from mneme/models', () => {
    expect(exportsOf('mneme/models')).toEqual(
      expect.arrayContaining([
        'createOllamaEmbeddingModel',
        'createOpenAiCompatibleChatModel',
        'createTransformersEmbeddingModel',
        'createChatFactExtractor',
      ]),
    );
  });

  it('serves the test fakes from mneme/testing', () => {
    expect(exportsOf('mneme/testing')).toEqual([
      'createFakeEmbeddingModel',
      'createFixedClock',
      'createScriptedChatModel',
    ]);
  });
});
