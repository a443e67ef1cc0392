/**
 * What importing each published package costs a library user: the wall time of `await import()` and the RSS it adds
 * (after a full GC) above a bare `node` doing the same with nothing imported, both measured in fresh processes in
 * this run, median of several. Also whether the import loaded @kubernetes/client-node (a module load hook records
 * it), which no package should do before an API client is first used. References: bare node's own start, and
 * client-node imported alone.
 *
 * Targets (issue 32): a package that does not talk to the API server imports in under 300 ms and under 20 MiB above
 * bare node. The figures are printed, never asserted: timings belong in benchmarks, not tests.
 *
 *   tsx bench/import-cost.bench.ts [--runs 5] [--only core,cri-client]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, only: { type: 'string' } } });
const runs = Number(values.runs);
const only = values.only?.split(',');
const root = new URL('../../../', import.meta.url).pathname;
const cwd = new URL('..', import.meta.url).pathname;

/** Packages that call the API server (their API clients load client-node on first use, never at import). */
const API_PACKAGES = new Set(['certificate', 'node-status', 'pod-config', 'server', 'status-manager', 'volume-manager']);

interface Sample {
  ms: number;
  rss: number;
  clientNode: boolean;
}

const work = mkdtempSync(join(tmpdir(), 'import-cost-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const hook = join(work, 'hook.mjs');
// Records, on stderr, that a module under @kubernetes/client-node was resolved.
writeFileSync(
  hook,
  `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(
    "export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.includes('/@kubernetes/client-node/')) process.stderr.write('CLIENT-NODE-LOADED\\n'); return r; }",
  )}));\n`,
);

function sample(specifier: string | undefined): Sample {
  const probe = `const t0 = performance.now(); ${specifier ? `await import(${JSON.stringify(specifier)});` : ''} const ms = performance.now() - t0; globalThis.gc(); globalThis.gc(); process.stdout.write(JSON.stringify({ ms, rss: process.memoryUsage().rss }));`;
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', hook, '--input-type=module', '-e', probe], { cwd, encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`import ${specifier} failed: ${child.stderr}`);
  const out = child.stdout;
  const stderr = child.stderr;
  const { ms, rss } = JSON.parse(out) as { ms: number; rss: number };
  return { ms, rss, clientNode: /CLIENT-NODE-LOADED/.test(stderr) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function measure(specifier: string | undefined): { ms: number; rss: number; clientNode: boolean } {
  const samples = Array.from({ length: runs }, () => sample(specifier));
  return { ms: median(samples.map((s) => s.ms)), rss: median(samples.map((s) => s.rss)), clientNode: samples.some((s) => s.clientNode) };
}

function bareNodeStartMs(): number {
  const times = Array.from({ length: runs }, () => {
    const t0 = performance.now();
    execFileSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
    return performance.now() - t0;
  });
  return median(times);
}

const packages = readdirSync(join(root, 'packages'))
  .filter((dir) => !only || only.includes(dir))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as { name: string; private?: boolean; exports?: Record<string, unknown> } }))
  .filter((p) => !p.manifest.private);

const bare = measure(undefined);
const startMs = bareNodeStartMs();
const mib = (bytes: number) => (bytes / (1 << 20)).toFixed(1);
console.log(`reference: bare node starts in ${startMs.toFixed(0)} ms; its RSS after GC with nothing imported is ${mib(bare.rss)} MiB (median of ${runs})`);
console.log('');
console.log(`${'specifier'.padEnd(40)} ${'import'.padStart(8)} ${'x node start'.padStart(13)} ${'+RSS'.padStart(9)}  client-node  target (<300 ms, <20 MiB)`);
const row = (name: string, r: { ms: number; rss: number; clientNode: boolean }, target: string) =>
  console.log(`${name.padEnd(40)} ${`${r.ms.toFixed(0)} ms`.padStart(8)} ${(r.ms / startMs).toFixed(2).padStart(13)} ${`${mib(r.rss - bare.rss)} MiB`.padStart(9)}  ${(r.clientNode ? 'loaded' : '-').padEnd(11)}  ${target}`);

for (const { dir, manifest } of packages) {
  const subpaths = Object.keys(manifest.exports ?? { '.': '' }).filter((s) => !/\.(proto|json)$/.test(s));
  for (const subpath of subpaths) {
    const specifier = subpath === '.' ? manifest.name : `${manifest.name}/${subpath.replace(/^\.\//, '')}`;
    const r = measure(specifier);
    const target = subpath !== '.' ? '(test doubles)' : API_PACKAGES.has(dir) ? '(talks to the API server)' : r.ms < 300 && r.rss - bare.rss < 20 * (1 << 20) ? 'met' : 'NOT met';
    row(specifier, r, target);
  }
}
row('@kubernetes/client-node (reference)', measure('@kubernetes/client-node'), '');
