import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { clientOf, type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

// Before, nothing bounded the connections a client held: one machine that opened 25,000 connections and sent nothing
// (or its header fields a byte at a time) took every file descriptor of `mneme serve` (20,000) until Node's timeouts
// ended them, and nobody was answered meanwhile, whatever key they had. Now one client address holds at most
// `connectionsPerAddress` connections (256 by default); one more is answered 503 before it is read, runs nothing, and
// other addresses are served.

const PER_ADDRESS = 4;
let mneme: Mneme;
let server: RunningHttpServer;
let bob: string;
let port: number;
const held: Socket[] = [];

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: () => {}, connectionsPerAddress: PER_ADDRESS });
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  for (const socket of held) socket.destroy();
  await server.close();
  await mneme.close();
});

/** A connection from `localAddress` that sends nothing, open once the server has accepted it. */
function idleConnection(localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => resolve(socket));
    socket.on('error', reject);
    held.push(socket);
  });
}

/** Sends `request` on a new connection from `localAddress` and reads until the server closes it. */
function exchange(localAddress: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(request));
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
    });
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' ? resolve(received) : reject(error),
    );
    socket.on('close', () => resolve(received));
    socket.setTimeout(3000, () => socket.end());
  });
}

const remember = (content: string) => {
  const body = JSON.stringify({ content, scope: 'personal', userId: 'bob' });
  return (
    `POST /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${bob}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
};

const bobsMemories = async () => (await mneme.list({ viewer: { userId: 'bob' }, limit: 100 })).memories;

describe('connections one client address holds', () => {
  it('one more than the limit is answered 503 problem+json before it is read, and its request runs nothing', async () => {
    for (let index = 0; index < PER_ADDRESS; index += 1) await idleConnection('127.0.0.1');
    const received = await exchange('127.0.0.1', remember('Bob keeps bees on the roof'));
    expect(received).toMatch(/^HTTP\/1\.1 503 /);
    expect(received).toMatch(/^Content-Type: application\/problem\+json\r$/im);
    expect(received).toMatch(/^Connection: close\r$/im);
    expect(received).toContain('"code":"TOO_MANY_CONNECTIONS"');
    expect(received).not.toContain('HTTP/1.1 201');
    expect(await bobsMemories()).toHaveLength(0);
  });

  it('another address is served while the first holds its limit, and the first is served once it lets go', async () => {
    const other = await exchange('127.0.0.2', remember('Bob keeps bees on the roof'));
    expect(other).toMatch(/^HTTP\/1\.1 201 /);
    for (const socket of held.splice(0)) socket.destroy();
    // The server sees the closes a moment later; until then the address may still be at its limit.
    let again = '';
    for (let attempt = 0; attempt < 50 && !again.startsWith('HTTP/1.1 201'); attempt += 1) {
      again = await exchange('127.0.0.1', remember(`Bob repaints the hives, try ${attempt}`));
      if (!again.startsWith('HTTP/1.1 201')) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(again).toMatch(/^HTTP\/1\.1 201 /);
    expect((await bobsMemories()).map((memory) => memory.content)).toContain('Bob keeps bees on the roof');
  });
});

describe('the limit itself', () => {
  it('is refused when it is not a whole number from 1', async () => {
    await expect(startHttpServer({ mneme, port: 0, connectionsPerAddress: 0 })).rejects.toThrow(
      'connections per address must be a whole number from 1, not 0',
    );
  });
});

describe('whom a connection counts against', () => {
  it('is its IPv4 address, also through a dual-stack socket, or the /64 network of its IPv6 address', () => {
    expect(clientOf('203.0.113.9')).toBe('203.0.113.9');
    expect(clientOf('::ffff:203.0.113.9')).toBe('203.0.113.9');
    // One host holds a whole /64: every address in it is the same client.
    expect(clientOf('2001:db8:0:7::1')).toBe(clientOf('2001:0db8:0000:0007:ffff:0:0:2'));
    expect(clientOf('2001:db8:0:7::1')).toBe('2001:db8:0:7::/64');
    expect(clientOf('2001:db8:0:8::1')).not.toBe(clientOf('2001:db8:0:7::1'));
    expect(clientOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
