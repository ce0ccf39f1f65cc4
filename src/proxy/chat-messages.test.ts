import { describe, expect, it } from 'vitest';
import { fitMessage, MAX_MESSAGE_CHARS } from '../core/schemas.js';
import { completionText, createStreamCollector, latestUserText, withContextBlock } from './chat-messages.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('chat messages', () => {
  it('reads the latest user message from a string or its text parts, skipping images', () => {
    expect(
      latestUserText([
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look at' },
            { type: 'image_url', image_url: { url: 'data:' } },
            { type: 'text', text: 'this' },
          ],
        },
        { role: 'tool', content: 'result' },
      ]),
    ).toBe('look at\nthis');
    expect(latestUserText([{ role: 'system', content: 'rules' }])).toBe('');
  });

  it('puts the block after the leading system and developer messages, never inside a user message', () => {
    const messages = [
      { role: 'system', content: 'a' },
      { role: 'developer', content: 'b' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'late' },
    ];
    expect(withContextBlock(messages, 'BLOCK').map((message) => `${message.role}:${message.content}`)).toEqual([
      'system:a',
      'developer:b',
      'system:BLOCK',
      'user:hi',
      'system:late',
    ]);
    expect(withContextBlock([{ role: 'user', content: 'hi' }], 'BLOCK')[0]).toEqual({
      role: 'system',
      content: 'BLOCK',
    });
    expect(messages).toHaveLength(4);
  });

  it("reads a completion's first choice", () => {
    expect(completionText({ choices: [{ index: 0, message: { role: 'assistant', content: 'hello' } }] })).toBe('hello');
    expect(completionText({ choices: [{ index: 0, message: { role: 'assistant', content: null } }] })).toBe('');
    expect(completionText('not json')).toBe('');
    const toolCall = { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{}' } };
    expect(
      completionText({
        choices: [{ index: 0, message: { role: 'assistant', content: 'Let me look.', tool_calls: [toolCall] } }],
      }),
    ).toBe('');
  });

  it('collects the first choice of events split anywhere, with CRLF lines and a last event without a blank line', () => {
    const collector = createStreamCollector();
    const event = (index: number, content: string) =>
      `data: ${JSON.stringify({ choices: [{ index, delta: { content } }] })}\r\n\r\n`;
    const stream = `${event(0, 'Grüß ')}: a comment\n\n${event(1, 'other choice')}${event(0, 'dich')}data: [DONE]`;
    const encoded = bytes(stream);
    for (let at = 0; at < encoded.length; at += 7) collector.push(encoded.slice(at, at + 7));
    expect(collector.text()).toBe('Grüß dich');
    expect(collector.done()).toBe(true);
    expect(collector.complete()).toBe(true);
  });

  it('keeps of a reply longer than a message what a message keeps, holding a bounded amount while it streams', () => {
    const collector = createStreamCollector();
    const pieces = Array.from({ length: 400 }, (_, index) => `piece ${index} ${'ë'.repeat(1000)} `);
    for (const piece of pieces) {
      collector.push(bytes(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`));
    }
    collector.push(bytes('data: [DONE]\n\n'));
    const whole = pieces.join('');
    expect(whole.length).toBeGreaterThan(10 * MAX_MESSAGE_CHARS);
    expect(collector.text()).toBe(fitMessage(whole));
    expect(collector.complete()).toBe(true);
  });

  it('takes a reply as incomplete when one line or event of its stream passes a mebibyte', () => {
    const endless = createStreamCollector();
    endless.push(bytes('data: {"choices":[{"index":0,"delta":{"content":"Hi'));
    for (let at = 0; at < 300; at += 1) endless.push(bytes('x'.repeat(4096)));
    endless.push(bytes('"}}]}\n\ndata: [DONE]\n\n'));
    expect(endless.complete()).toBe(false);

    const longEvent = createStreamCollector();
    for (let at = 0; at < 300; at += 1) longEvent.push(bytes(`data: ${'y'.repeat(4096)}\n`));
    longEvent.push(bytes('\ndata: [DONE]\n\n'));
    expect(longEvent.complete()).toBe(false);
  });

  it('takes a stream the same way however its bytes are split, with LF, CRLF or CR line ends and a line of a mebibyte', () => {
    const MiB = 1024 * 1024;
    const event = (content: string, end: string, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}${end}${end}`;
    /** A data line of `chars` characters, its line end aside, holding one delta of x's. */
    const lineOf = (chars: number) => event('x'.repeat(chars - event('', '').length), '\r\n');
    const streams = [
      {
        name: 'CR line ends',
        stream: `${event('Hi', '\r')}${event(' there', '\r', 'stop')}data: [DONE]\r\r`,
        reply: 'Hi there',
      },
      { name: 'a line of exactly a mebibyte', stream: `${lineOf(MiB)}${event('', '\n', 'stop')}`, reply: 'xxxxxxxx' },
      { name: 'a data line a little longer', stream: `${lineOf(MiB + 3)}${event('', '\n', 'stop')}`, reply: null },
      { name: 'a comment longer', stream: `: ${'z'.repeat(MiB)}\n\n${event('Hi', '\n', 'stop')}`, reply: null },
    ];
    for (const { name, stream, reply } of streams) {
      const encoded = bytes(stream);
      // Whole; in pieces of 1000 and of 65536 bytes; and cut right after each CR.
      const cuts = [
        [encoded.length],
        Array.from({ length: Math.ceil(encoded.length / 1000) }, (_, index) => (index + 1) * 1000),
        Array.from({ length: Math.ceil(encoded.length / 65536) }, (_, index) => (index + 1) * 65536),
        [...encoded.keys()].filter((at) => encoded[at] === 0x0d).map((at) => at + 1),
      ];
      for (const ends of cuts) {
        const collector = createStreamCollector();
        let from = 0;
        for (const end of [...ends, encoded.length]) {
          if (end > from) collector.push(encoded.slice(from, end));
          from = Math.max(from, end);
        }
        const outcome = collector.complete() ? collector.text().slice(0, 8) : null;
        expect({ name, pieces: ends.length, outcome }).toEqual({ name, pieces: ends.length, outcome: reply });
      }
    }
  });
});
