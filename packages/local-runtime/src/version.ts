import { readFileSync } from 'node:fs';

/** This package's version (from its package.json, next to both src/ and dist/). */
export const LOCAL_RUNTIME_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The runtime name reported by Version. */
export const LOCAL_RUNTIME_NAME = 'local-runtime';
