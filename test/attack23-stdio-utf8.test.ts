import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23-stdio-utf8-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const line = (message: unknown) => Buffer.from(`${JSON.stringify(message)}\n`);

/** A remember call whose content holds `café` with the é in Latin-1 (one byte, 0xE9), as a Latin-1 host writes it. */
function latin1Remember(id: number): Buffer {
  return Buffer.concat([
    Buffer.from(
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"remember","arguments":{"content":"Alice likes caf`,
    ),
    Buffer.from([0xe9]),
    Buffer.from(' au lait"}}}\n'),
  ]);
}

describe('mneme mcp given a message line that is not UTF-8', () => {
  it('answers it with a parse error, stores nothing of it, and answers the next line', async () => {
    const database = join(folder, 'stdio.db');
    const child = spawn(process.execPath, [mnemeBinary, 'mcp', '--db', database, '--user', 'alice'], {
      env: { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(child, 'exit');
    child.stdin.end(
      Buffer.concat([
        line({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'latin1', version: '1' } },
        }),
        latin1Remember(1),
        line({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'remember', arguments: { content: 'Alice likes green tea' } },
        }),
      ]),
    );
    const [code] = await exited;
    expect(code, stderr).toBe(0);

    const answers = stdout
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as { id: number | null; error?: { code: number } });
    expect(answers.find((answer) => answer.id === null)?.error?.code).toBe(-32700);
    expect(answers.map((answer) => answer.id).filter((id) => id !== null)).toEqual([0, 2]);
    const listed = await runCli(database, ['--json', 'list', '--user', 'alice']);
    const contents = (JSON.parse(listed.stdout) as { memories: Array<{ content: string }> }).memories.map(
      (memory) => memory.content,
    );
    // The HTTP face refuses such a body; stdio must not store U+FFFD in place of the byte either.
    expect(contents).toEqual(['Alice likes green tea']);
  });
});
