#!/usr/bin/env node
import { createWriteStream, fstatSync } from 'node:fs';
import { main } from './cli-main.js';

/**
 * Where `mneme export` streams. Node writes a standard output redirected to a file with `writeSync` and does not
 * look at how much was written: on a full disk the last write is cut short without an error, and the export ended
 * with exit code 0 and no end line. A file stream over the same descriptor writes what is left again, and the
 * disk's ENOSPC fails the export.
 */
function exportStream(): NodeJS.WritableStream {
  try {
    if (fstatSync(1).isFile()) return createWriteStream('', { fd: 1, autoClose: false });
  } catch {
    // No standard output to look at: process.stdout says what it can.
  }
  return process.stdout;
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stdoutStream: exportStream(),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
