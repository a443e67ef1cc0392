#!/usr/bin/env node
// The dependency lint of the workspace (run by this project's `lint` target): exits 1 naming every problem.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lintDependencies } from './lint-deps.js';

const root = resolve(process.argv[2] ?? fileURLToPath(new URL('../../..', import.meta.url)));
const problems = lintDependencies(root);
for (const p of problems) console.error(`${p.file}: ${p.message}`);
if (problems.length > 0) {
  console.error(`lint-deps: ${problems.length} problem(s) in ${root}`);
  process.exit(1);
}
console.log(`lint-deps: dependency ranges in ${root} are consistent`);
