// Copies the inspector's static files (plain ES modules and CSS, no build step) next to its compiled module.
import { cpSync } from 'node:fs';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
cpSync(resolve(root, 'src/http/inspector/assets'), resolve(root, 'dist/http/inspector/assets'), { recursive: true });
