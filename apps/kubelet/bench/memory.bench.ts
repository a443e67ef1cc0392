/**
 * Memory and start-up of the built kubelet binary, as an operator runs it: process start -> healthz OK, then RSS idle
 * and with 20, 110 and 1,000 pods running on the simulated runtime (served from this process, so the RSS figures are
 * the kubelet's alone), the bytes each further pod costs, and the scale-down: all pods removed (N -> 0), the RSS and
 * V8 heap after it against the same figures before the scale-up (the goal: within 10%). Two sources of pods:
 * static manifests, and API server mode against @kubelet-ts/test-apiserver (in this process), where the kubelet
 * also runs the pod watch, node status, the lease, events and status patches, as on a real cluster. The same run
 * measures, as references, the unbundled build (dist/main.js, ~1,100 modules on plain node) and node itself doing
 * nothing. The Go kubelet's figures on the same workload come from the cluster side-by-side bench
 * (tools/cluster-e2e), which runs both.
 *
 * Beside each RSS: the V8 heap (used and committed, from a Node.js report taken on a signal) and the rest of the RSS
 * (code, malloc, buffers), which tells a heap that keeps objects from memory V8 or malloc does not give back.
 *
 *   tsx bench/memory.bench.ts [--pods 20,110,1000] [--settle-ms 5000] [--modes static,apiserver] [--builds bundle,unbundled]
 *   BENCH_HEAP_SNAPSHOT=<dir>: a V8 heap snapshot of each kubelet run idle, at each pod count and after the scale-down
 *   (the unbundled build's keep their class and function names)
 *   BENCH_NODE_FLAGS: further node/V8 flags for the kubelet processes, e.g. to compare V8 flags (the bundle then runs
 *   as `node <its shebang's flags> <these> kubelet.mjs`)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pollUntil, processResources } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '20,110,1000' },
    'settle-ms': { type: 'string', default: '5000' },
    modes: { type: 'string', default: 'static,apiserver' },
    builds: { type: 'string', default: 'bundle,unbundled' },
  },
});
const podCounts = values.pods.split(',').map(Number);
const settleMs = Number(values['settle-ms']);
const modes = values.modes.split(',') as Mode[];
const builds = values.builds.split(',');
const IMAGE = 'localhost/kubelet-ts/busybox:1';
const NODE = 'bench';
const NAMESPACE = 'bench';
const dist = new URL('../dist/', import.meta.url).pathname;
const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(0)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Mode = 'static' | 'apiserver';

/** The process's memory at one point: RSS and, from a Node.js report, the V8 heap. */
interface Memory {
  rss: number;
  heapUsed: number;
  heapCommitted: number;
}

interface BinaryRun {
  healthzMs: number;
  idle: Memory;
  at: Map<number, Memory>;
  cpuSecondsAt: Map<number, number>;
  /** After every pod is gone again (N -> 0). */
  scaledDown: Memory;
  scaleDownMs: number;
}

/** The V8 heap of the kubelet process from a Node.js report (--report-on-signal): used and committed bytes. */
async function heapOf(child: ChildProcess, reports: string): Promise<{ heapUsed: number; heapCommitted: number }> {
  const before = new Set(readdirSync(reports));
  child.kill('SIGWINCH');
  let file: string | undefined;
  await pollUntil(() => (file = readdirSync(reports).find((f) => !before.has(f) && f.endsWith('.json'))) !== undefined, 20, 30_000);
  let report: { javascriptHeap: { usedMemory: number; totalCommittedMemory: number } } | undefined;
  // Written in one go; retried while it is still being written.
  await pollUntil(() => {
    try {
      report = JSON.parse(readFileSync(join(reports, file!), 'utf8'));
      return true;
    } catch {
      return false;
    }
  }, 20, 10_000);
  unlinkSync(join(reports, file!));
  return { heapUsed: report!.javascriptHeap.usedMemory, heapCommitted: report!.javascriptHeap.totalCommittedMemory };
}

async function runningContainers(runtime: RemoteRuntimeService): Promise<number> {
  return (await runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).length;
}

async function readySandboxes(runtime: RemoteRuntimeService): Promise<number> {
  return (await runtime.listPodSandbox({ state: { state: 'SANDBOX_READY' } })).length;
}

const podSpec = { containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }] };

async function measure(label: string, mode: Mode, command: string, args: string[], endpoint: string, dir: string, healthzPort: number, snapshots?: string): Promise<BinaryRun> {
  const run = `${label}-${mode}`;
  const manifests = join(dir, `${run}-manifests`);
  const reports = join(dir, `${run}-reports`);
  mkdirSync(manifests, { recursive: true });
  mkdirSync(reports, { recursive: true });
  let server: TestApiServer | undefined;
  const flags = [
    `--pod-manifest-path=${manifests}`,
    `--root-dir=${join(dir, `${run}-root`)}`,
    `--pod-logs-dir=${join(dir, `${run}-logs`)}`,
    `--container-runtime-endpoint=${endpoint}`,
    `--hostname-override=${NODE}`,
    '--cgroups-per-qos=false',
    `--healthz-port=${healthzPort}`,
    `--max-pods=${Math.max(110, ...podCounts)}`,
  ];
  if (mode === 'apiserver') {
    server = await startTestApiServer({ maxRequestLog: 1000 });
    server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    const kubeconfig = join(dir, `${run}-kubeconfig`);
    server.writeKubeconfig(kubeconfig);
    flags.push(`--kubeconfig=${kubeconfig}`);
  }
  const nodeOptions = [`--report-on-signal --report-signal=SIGWINCH --report-directory=${reports}`, snapshots ? '--heapsnapshot-signal=SIGUSR2' : ''].filter(Boolean).join(' ');
  const env = { ...process.env, NODE_OPTIONS: nodeOptions };
  const extraFlags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  if (extraFlags.length > 0) {
    // node with the flags the binary's shebang gives it (env -S node <flags>), then the extra ones.
    const shebangFlags = command === process.execPath ? [] : (/^#!.*\bnode\b(.*)$/m.exec(readFileSync(command, 'utf8').slice(0, 200))?.[1] ?? '').split(' ').filter(Boolean);
    args = [...shebangFlags, ...extraFlags, ...(command === process.execPath ? [] : [command]), ...args];
    command = process.execPath;
  }
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
    renameSync(join(snapshots, file), join(snapshots, `${run}-${name}.heapsnapshot`));
  };
  /** RSS once the process has been quiet for a moment (V8 gives pages back after a burst only when idle), and its heap. */
  const settled = async (): Promise<Memory> => {
    await sleep(settleMs);
    const rss = processResources(child.pid!).rssBytes;
    return { rss, ...(await heapOf(child, reports)) };
  };
  const podsInApi = () => server!.store.list('pods', NAMESPACE).length;
  try {
    await pollUntil(async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`).then((r) => r.ok).catch(() => false)), 5, 60_000);
    const healthzMs = performance.now() - started;
    if (server) await pollUntil(() => (server!.store.get('nodes', undefined, NODE) as { status?: { conditions?: { type: string; status: string }[] } } | undefined)?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false, 50, 60_000);
    const result: BinaryRun = { healthzMs, idle: await settled(), at: new Map(), cpuSecondsAt: new Map(), scaledDown: { rss: 0, heapUsed: 0, heapCommitted: 0 }, scaleDownMs: 0 };
    await snapshot('idle');
    let written = 0;
    for (const count of podCounts) {
      for (; written < count; written++) {
        if (server) server.store.create('pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${written}`, namespace: NAMESPACE }, spec: { ...podSpec, nodeName: NODE, terminationGracePeriodSeconds: 1 } });
        else writeFileSync(join(manifests, `p${written}.json`), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${written}` }, spec: podSpec }));
      }
      await pollUntil(async () => (await runningContainers(runtime)) >= count, 100, 600_000);
      if (server) await pollUntil(() => server!.store.list('pods', NAMESPACE).filter((p) => (p as { status?: { phase?: string } }).status?.phase === 'Running').length >= count, 100, 600_000);
      result.at.set(count, await settled());
      result.cpuSecondsAt.set(count, processResources(child.pid!).cpuSeconds);
      await snapshot(`${count}-pods`);
    }
    // Scale-down: every pod removed, as a user deletes them (API) or takes the manifests away (static).
    const downStarted = performance.now();
    for (let i = 0; i < written; i++) {
      if (server) server.store.delete('pods', NAMESPACE, `p${i}`);
      else rmSync(join(manifests, `p${i}.json`));
    }
    await pollUntil(async () => (await runningContainers(runtime)) === 0 && (await readySandboxes(runtime)) === 0 && (!server || podsInApi() === 0), 100, 600_000);
    result.scaleDownMs = performance.now() - downStarted;
    result.scaledDown = await settled();
    await snapshot('scaled-down');
    return result;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    runtime.close();
    await removeRuntimePods(endpoint);
    await server?.close();
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
  const heap = (m: Memory) => `${mib(m.rss)} (heap ${mib(m.heapUsed)}/${mib(m.heapCommitted)}, rest ${mib(m.rss - m.heapCommitted)})`;
  for (const mode of modes) {
    const runs = new Map<string, BinaryRun>();
    if (builds.includes('bundle')) runs.set('kubelet.mjs', await measure('bundle', mode, join(dist, 'kubelet.mjs'), [], local.endpoint, dir, 10_298, snapshots));
    if (builds.includes('unbundled')) runs.set('dist/main.js', await measure('unbundled', mode, process.execPath, [join(dist, 'main.js')], local.endpoint, dir, 10_299, snapshots));
    const names = [...runs.keys()];
    const all = [...runs.values()];
    console.log('');
    console.log(`Memory and start of the built kubelet binary, ${mode === 'static' ? 'static pods' : 'API server mode (test-apiserver), bound pods'} on the simulated runtime (RSS after a quiet moment; one run)`);
    console.log(`${'figure'.padEnd(40)} ${names.map((n) => n.padStart(12)).join(' ')}${all.length === 2 ? ' ratio'.padStart(8) : ''}`);
    const row = (name: string, pick: (r: BinaryRun) => number, unit: (v: number) => string) => {
      const v = all.map(pick);
      console.log(`${name.padEnd(40)} ${v.map((x) => unit(x).padStart(12)).join(' ')}${v.length === 2 ? (v[0] / v[1]).toFixed(2).padStart(8) : ''}`);
    };
    row('process start -> healthz OK', (r) => r.healthzMs, (v) => `${v.toFixed(0)} ms`);
    row('RSS idle', (r) => r.idle.rss, mib);
    for (const count of podCounts) row(`RSS with ${count} pods running`, (r) => r.at.get(count)!.rss, mib);
    const [low, high] = [podCounts.at(-2) ?? 0, podCounts.at(-1)!];
    row(`bytes per pod (${low} -> ${high} pods)`, (r) => (r.at.get(high)!.rss - (low ? r.at.get(low)!.rss : r.idle.rss)) / (high - low), (v) => `${(v / 1024).toFixed(0)} KiB`);
    row(`CPU seconds, start + ${high} pods`, (r) => r.cpuSecondsAt.get(high)!, (v) => `${v.toFixed(1)} s`);
    row(`${high} -> 0 pods gone`, (r) => r.scaleDownMs, (v) => `${(v / 1000).toFixed(1)} s`);
    row(`RSS after ${high} -> 0`, (r) => r.scaledDown.rss, mib);
    row(`RSS after ${high} -> 0 / before scale-up`, (r) => r.scaledDown.rss / r.idle.rss, (v) => v.toFixed(2));
    row(`heap used after ${high} -> 0 / before`, (r) => r.scaledDown.heapUsed / r.idle.heapUsed, (v) => v.toFixed(2));
    for (const [name, r] of runs) {
      console.log(`  ${name}: idle ${heap(r.idle)}; ${[...r.at].map(([n, m]) => `${n} pods ${heap(m)}`).join('; ')}; after ${high} -> 0 ${heap(r.scaledDown)}`);
    }
  }
  console.log(`node itself, idle: ${mib(floor)} RSS (of which its own code is shared with every node process)`);
  console.log("Targets: RSS <= the Go kubelet's on the same workload (Go's figures: the side-by-side bench in tools/cluster-e2e); RSS after N -> 0 within 10% of the RSS before scale-up");
} finally {
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
}
