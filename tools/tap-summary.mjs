// Adds up the closing `# { total: N, pass: N, fail: N, ... }` line of every tap run in a log and prints
// one closing line, so the number of tests run is visible at the end of the whole run.
import { readFileSync } from 'node:fs';

// eslint-disable-next-line no-control-regex
const text = readFileSync(process.argv[2], 'utf8').replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r/g, '');
const totals = { total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
let runs = 0;
for (const match of text.matchAll(/^# \{ (total: \d+[^}]*)\}\s*$/gm)) {
  runs++;
  for (const field of match[1].split(',')) {
    const [key, value] = field.split(':').map((part) => part.trim());
    if (key in totals) totals[key] += Number(value);
  }
}
console.log(`tap runs: ${runs}, tests: ${totals.total}, skipped: ${totals.skip}, todo: ${totals.todo}`);
console.log(`tests: ${totals.pass} passed, ${totals.fail} failed${totals.skip ? `, ${totals.skip} skipped` : ''}`);
process.exit(runs > 0 && totals.fail === 0 && totals.total > 0 ? 0 : 1);
