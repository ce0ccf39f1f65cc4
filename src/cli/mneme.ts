#!/usr/bin/env node
import { main } from './cli-main.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stdoutStream: process.stdout,
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
