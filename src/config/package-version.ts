import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** This mneme's version, from the package.json two folders up (`src/config/` and `dist/config/` alike). */
export function packageVersion(): string {
  if (cached === undefined) {
    try {
      const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version?: unknown;
      };
      cached = typeof manifest.version === 'string' ? manifest.version : 'unknown';
    } catch {
      cached = 'unknown';
    }
  }
  return cached;
}
