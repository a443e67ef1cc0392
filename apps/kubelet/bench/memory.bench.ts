/**
 * Memory and start-up of the built kubelet binary, as an operator runs it: process start -> healthz OK, then RSS idle
 * and with 20, 110 and 1,000 static pods running on the simulated runtime (served from this process, so the RSS
 * figures are the kubelet's alone), and the bytes each further pod costs. The same run measures, as references,
 * the unbundled build (dist/main.js, ~1,100 modules on plain node) and node itself doing nothing. The Go kubelet's
 * figures on the same workload come from the cluster side-by-side bench (tools/cluster-e2e), which runs both.
 *
 *   tsx bench/memory.bench.ts [--pods 20,110,1000] [--settle-ms 5000]
 *   BENCH_HEAP_SNAPSHOT=<dir>: a V8 heap snapshot of the bundled kubelet idle and at each pod count
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pollUntil, processResources } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { LocalRuntime } from '@kubelet-ts/local-runtime';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '20,110,1000' }, 'settle-ms': { type: 'string', default: '5000' } } });
const podCounts = values.pods.split(',').map(Number);
const settleMs = Number(values['settle-ms']);
const IMAGE = 'localhost/kubelet-ts/busybox:1';
const dist = new URL('../dist/', import.meta.url).pathname;
const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(0)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface BinaryRun {
  healthzMs: number;
  idleRss: number;
  rssAt: Map<number, number>;
  cpuSecondsAt: Map<number, number>;
}

/** RSS once the process has been quiet for a moment: V8 gives pages back after a burst only when idle. */
async function settledRss(pid: number): Promise<number> {
  await sleep(settleMs);
  return processResources(pid).rssBytes;
}

async function runningContainers(runtime: RemoteRuntimeService): Promise<number> {
  return (await runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).length;
}

async function measure(label: string, command: string, args: string[], endpoint: string, dir: string, healthzPort: number, snapshots?: string): Promise<BinaryRun> {
  const manifests = join(dir, `${label}-manifests`);
  mkdirSync(manifests, { recursive: true });
  const flags = [
    `--pod-manifest-path=${manifests}`,
    `--root-dir=${join(dir, `${label}-root`)}`,
    `--pod-logs-dir=${join(dir, `${label}-logs`)}`,
    `--container-runtime-endpoint=${endpoint}`,
    '--hostname-override=bench',
    '--cgroups-per-qos=false',
    `--healthz-port=${healthzPort}`,
    `--max-pods=${Math.max(110, ...podCounts)}`,
  ];
  const env = snapshots ? { ...process.env, NODE_OPTIONS: '--heapsnapshot-signal=SIGUSR2' } : process.env;
  const started = performance.now();
  const child: ChildProcess = spawn(command, [...args, ...flags], { stdio: 'ignore', env, cwd: snapshots ?? dir });
  const runtime = new RemoteRuntimeService({ endpoint });
  const snapshot = async (name: string) => {
    if (!snapshots) return;
    const before = new Set(readdirSync(snapshots));
    child.kill('SIGUSR2');
    await pollUntil(() => readdirSync(snapshots).some((f) => !before.has(f) && f.endsWith('.heapsnapshot')), 100, 120_000);
    const file = readdirSync(snapshots).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'))!;
    await sleep(2000); // written in one go, but give it time to close
    renameSync(join(snapshots, file), join(snapshots, `${label}-${name}.heapsnapshot`));
  };
  try {
    await pollUntil(async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`).then((r) => r.ok).catch(() => false)), 5, 60_000);
    const healthzMs = performance.now() - started;
    const pid = child.pid!;
    const run: BinaryRun = { healthzMs, idleRss: await settledRss(pid), rssAt: new Map(), cpuSecondsAt: new Map() };
    await snapshot('idle');
    let written = 0;
    for (const count of podCounts) {
      for (; written < count; written++) {
        writeFileSync(
          join(manifests, `p${written}.json`),
          JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${written}` }, spec: { containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }] } }),
        );
      }
      await pollUntil(async () => (await runningContainers(runtime)) >= count, 100, 600_000);
      run.rssAt.set(count, await settledRss(pid));
      run.cpuSecondsAt.set(count, processResources(pid).cpuSeconds);
      await snapshot(`${count}-pods`);
    }
    return run;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    runtime.close();
    await removeRuntimePods(endpoint);
  }
}

/** node itself, doing nothing: the floor under any kubelet written for it. */
async function nodeFloor(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  await sleep(1000);
  const rss = processResources(child.pid!).rssBytes;
  child.kill();
  return rss;
}

const dir = mkdtempSync(join(tmpdir(), 'kubelet-memory-'));
const local = new LocalRuntime({ socketPath: join(dir, 'sim.sock'), rootDir: join(dir, 'sim-root'), mode: 'simulated' });
await local.start();
try {
  const snapshots = process.env.BENCH_HEAP_SNAPSHOT;
  if (snapshots) mkdirSync(snapshots, { recursive: true });
  const floor = await nodeFloor();
  const bundle = await measure('bundle', join(dist, 'kubelet.mjs'), [], local.endpoint, dir, 10_298, snapshots);
  const unbundled = await measure('unbundled', process.execPath, [join(dist, 'main.js')], local.endpoint, dir, 10_299);

  console.log('Memory and start of the built kubelet binary, static pods on the simulated runtime (RSS after a quiet moment; one run)');
  console.log(`${'figure'.padEnd(40)} ${'kubelet.mjs'.padStart(12)} ${'dist/main.js'.padStart(12)} ${'ratio'.padStart(7)}`);
  const row = (name: string, a: number, b: number, unit: (v: number) => string) => console.log(`${name.padEnd(40)} ${unit(a).padStart(12)} ${unit(b).padStart(12)} ${(a / b).toFixed(2).padStart(7)}`);
  row('process start -> healthz OK', bundle.healthzMs, unbundled.healthzMs, (v) => `${v.toFixed(0)} ms`);
  row('RSS idle', bundle.idleRss, unbundled.idleRss, mib);
  for (const count of podCounts) row(`RSS with ${count} pods running`, bundle.rssAt.get(count)!, unbundled.rssAt.get(count)!, mib);
  const [low, high] = [podCounts.at(-2) ?? 0, podCounts.at(-1)!];
  const perPod = (run: BinaryRun) => ((run.rssAt.get(high) ?? 0) - (low ? run.rssAt.get(low)! : run.idleRss)) / (high - low);
  row(`bytes per pod (${low} -> ${high} pods)`, perPod(bundle), perPod(unbundled), (v) => `${(v / 1024).toFixed(0)} KiB`);
  row(`CPU seconds, start + ${high} pods`, bundle.cpuSecondsAt.get(high)!, unbundled.cpuSecondsAt.get(high)!, (v) => `${v.toFixed(1)} s`);
  console.log(`node itself, idle: ${mib(floor)} RSS (of which its own code is shared with every node process)`);
  console.log("Target: RSS <= the Go kubelet's on the same workload (~100 MB at 20 pods); Go's figures: the side-by-side bench in tools/cluster-e2e");
} finally {
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
}
