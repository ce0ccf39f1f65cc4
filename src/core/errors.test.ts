import { describe, expect, it } from 'vitest';
import { ErrorCode, errorMessage, MnemeError } from './errors.js';

describe('errorMessage', () => {
  it('gives an error its message, and a thrown value its text', () => {
    expect(errorMessage(new MnemeError(ErrorCode.StoreBusy, 'the database is busy'))).toBe('the database is busy');
    expect(errorMessage(new TypeError('not a function'))).toBe('not a function');
    expect(errorMessage('disk full')).toBe('disk full');
    expect(errorMessage(42)).toBe('42');
    expect(errorMessage(null)).toBe('null');
  });

  it('names an object that is not an Error by its message, or its name and code, never as [object Object]', () => {
    expect(errorMessage({ message: 'the socket closed' })).toBe('the socket closed');
    // What PGlite (Emscripten's file system) throws for a missing file.
    expect(errorMessage({ name: 'ErrnoError', errno: 44 })).toBe('ErrnoError errno 44');
    expect(errorMessage({ code: 'ECONNRESET' })).toBe('ECONNRESET');
    expect(errorMessage({ unrelated: true })).toBe('[object Object]');
  });
});
