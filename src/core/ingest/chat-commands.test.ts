import { describe, expect, it } from 'vitest';
import { matchesForgetPattern, parseChatCommand } from './chat-commands.js';

describe('parseChatCommand', () => {
  it('reads /remember and /forget with their argument, in any case', () => {
    expect(parseChatCommand('/remember I am allergic to peanuts')).toEqual({
      name: 'remember',
      text: 'I am allergic to peanuts',
    });
    expect(parseChatCommand('  /FORGET   dark mode ')).toEqual({ name: 'forget', pattern: 'dark mode' });
    expect(parseChatCommand('/remember')).toEqual({ name: 'remember', text: '' });
    expect(parseChatCommand('/remember\nline one\nline two')).toEqual({ name: 'remember', text: 'line one\nline two' });
  });

  it('ignores other messages and other commands', () => {
    expect(parseChatCommand('please remember this')).toBeNull();
    expect(parseChatCommand('/remembering things')).toBeNull();
    expect(parseChatCommand('/help')).toBeNull();
  });
});

describe('matchesForgetPattern', () => {
  it('matches text containing the pattern, ignoring case and spacing, with * for anything', () => {
    expect(matchesForgetPattern('Oz prefers Dark  Mode', 'dark mode')).toBe(true);
    expect(matchesForgetPattern('Oz prefers dark chocolate', 'dark mode')).toBe(false);
    expect(matchesForgetPattern('a darker colour mode', 'dark*mode')).toBe(true);
    expect(matchesForgetPattern('costs $5 (maybe)', '$5 (maybe)')).toBe(true);
  });
});
