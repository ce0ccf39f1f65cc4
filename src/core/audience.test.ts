import { describe, expect, it } from 'vitest';
import { scopeWithinAudience } from './audience.js';

describe('scopeWithinAudience', () => {
  it('narrows a global fact of a private or direct channel to the room', () => {
    expect(scopeWithinAudience('global', false)).toBe('room');
  });

  it('keeps a global fact of a public channel global', () => {
    expect(scopeWithinAudience('global', true)).toBe('global');
  });

  it('never widens a personal or room fact', () => {
    for (const isPublic of [true, false]) {
      expect(scopeWithinAudience('personal', isPublic)).toBe('personal');
      expect(scopeWithinAudience('room', isPublic)).toBe('room');
    }
  });

  it('makes every fact told from the speaker personal memories personal, a global one of a public channel too', () => {
    for (const isPublic of [true, false]) {
      for (const scope of ['personal', 'room', 'global'] as const) {
        expect(scopeWithinAudience(scope, isPublic, true)).toBe('personal');
      }
    }
  });
});
