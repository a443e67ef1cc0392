/**
 * Kubelet pod start overhead and density.
 *
 * Overhead: N pods written as static manifests into a running kubelet's manifest directory; the time until
 * every pod's container has started in the runtime, divided by the time of the bare CRI calls the same
 * start makes (RunPodSandbox, PodSandboxStatus, ImageStatus, CreateContainer, StartContainer per pod, as
 * the Go kubelet's SyncPod does, all pods at once),
 * made directly against the same runtime in the same run. On the simulated local runtime and, when
 * tools/containerd/start.sh has run, on containerd. Targets on the simulated runtime: <= 1.1 at 110 pods, <= 1.2 at 1,000; status lag (last container started -> last pod reported Running) with the evented PLEG <= 50 ms and <= 500 ms, with the generic PLEG <= one relist period.
 *
 * Density (simulated runtime): 110 and 1,000 pods: per-pod start latency p50/p99 (manifest written ->
 * container started), "all running as reported by the kubelet", PLEG relist duration, and the kubelet's
 * RSS and CPU at steady state. The runtime runs in its own process so the figures are the kubelet's.
 *
 *   tsx bench/pod-start.bench.ts [--pods 110,1000] [--containerd-pods N] [--density 110,1000] [--rounds 5]
 *   BENCH_CPU_PROFILE=<dir>: a CPU profile of each kubelet run, manifests written -> all reported Running
 */
import 'reflect-metadata';
import { container } from 'tsyringe';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Session } from 'node:inspector/promises';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { RemoteImageService, RemoteRuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import { ensureHostCgroup, removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import type { GenericPLEG } from '@kubelet-ts/pleg';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet } from '../src/index.js';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '110,1000' },
    'containerd-pods': { type: 'string', default: '20' },
    density: { type: 'string', default: '110,1000' },
    rounds: { type: 'string', default: '5' },
  },
});

const IMAGE = 'localhost/kubelet-ts/busybox:1';
const localRuntimeCli = new URL('../../../packages/local-runtime/dist/cli.js', import.meta.url).pathname;

async function startSimulatedRuntime(dir: string): Promise<{ endpoint: string; process: ChildProcess }> {
  const socket = join(dir, 'sim.sock');
  const child = spawn(process.execPath, [localRuntimeCli, '--socket', socket, '--root-dir', join(dir, 'sim-root'), '--mode', 'simulated'], { stdio: 'ignore' });
  await pollUntil(() => existsSync(socket), 20, 10_000);
  return { endpoint: `unix://${socket}`, process: child };
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Records when StartContainer returned for each pod: the same end point as the bare calls, seen from the
 * kubelet's side, without adding load (event streams, polling) to the runtime being measured.
 */
class StartRecorder {
  readonly startedAt = new Map<string, number>();
  /** RuntimeService calls the kubelet made since counting began (undefined: not counting). */
  calls: number | undefined;
  private waiter?: () => void;
  constructor(private readonly expected: number) {}

  wrap(service: RemoteRuntimeService): RemoteRuntimeService {
    const containerPods = new Map<string, string>();
    return new Proxy(service, {
      get: (target, property, receiver) => {
        if (property === 'createContainer') {
          if (this.calls !== undefined) this.calls++;
          return async (sandboxId: string, config: runtimeapi.ContainerConfigInit, sandboxConfig: runtimeapi.PodSandboxConfigInit, options?: unknown) => {
            const id = await target.createContainer(sandboxId, config, sandboxConfig, options as never);
            containerPods.set(id, sandboxConfig.metadata?.name ?? '');
            return id;
          };
        }
        if (property === 'startContainer') {
          if (this.calls !== undefined) this.calls++;
          return async (id: string, options?: unknown) => {
            const t = performance.now();
            await target.startContainer(id, options as never);
            if (process.env.BENCH_DEBUG) { const stats = (globalThis as any).__rpc ??= new Map(); const e = stats.get('startContainer') ?? { n: 0, first: Infinity, last: 0, total: 0 }; e.n++; e.first = Math.min(e.first, t); e.last = Math.max(e.last, performance.now()); e.total += performance.now() - t; stats.set('startContainer', e); }
            const pod = containerPods.get(id) ?? '';
            if (!this.startedAt.has(pod)) this.startedAt.set(pod, performance.now());
            if (this.startedAt.size >= this.expected) this.waiter?.();
          };
        }
        const value = Reflect.get(target, property, receiver);
        if (this.calls !== undefined && typeof value === 'function') this.calls++;
        if (process.env.BENCH_DEBUG && typeof value === 'function') {
          return async (...args: unknown[]) => {
            const t = performance.now();
            try { return await value.apply(target, args); } finally { const stats = (globalThis as any).__rpc ??= new Map(); const e = stats.get(property) ?? { n: 0, first: Infinity, last: 0, total: 0 }; e.n++; e.first = Math.min(e.first, t); e.last = Math.max(e.last, performance.now()); e.total += performance.now() - t; stats.set(property, e); }
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  async all(): Promise<Map<string, number>> {
    if (this.startedAt.size < this.expected) await new Promise<void>((resolve) => (this.waiter = resolve));
    return this.startedAt;
  }
}

/** The bare CRI calls for N pods, all at once; returns the wall time and this process's CPU time, in ms. */
async function bareStart(endpoint: string, count: number, image: string, logRoot: string, prefix: string): Promise<{ wallMs: number; cpuMs: number }> {
  const runtime = new RemoteRuntimeService({ endpoint });
  const images = new RemoteImageService({ endpoint });
  const start = performance.now();
  const cpuAtStart = process.cpuUsage();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const name = `${prefix}-${i}`;
      const uid = `${prefix}-uid-${i}`;
      const config: runtimeapi.PodSandboxConfigInit = {
        metadata: { name, namespace: 'bench', uid, attempt: 0 },
        hostname: name,
        logDirectory: join(logRoot, uid),
        labels: { 'bench.pod': name },
        linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
      };
      const sandboxId = await runtime.runPodSandbox(config);
      await runtime.podSandboxStatus(sandboxId);
      await images.imageStatus({ image });
      const containerId = await runtime.createContainer(
        sandboxId,
        { metadata: { name: 'app', attempt: 0 }, image: { image }, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], logPath: 'app/0.log', labels: { 'bench.pod': name } },
        config,
      );
      await runtime.startContainer(containerId);
    }),
  );
  const elapsed = performance.now() - start;
  const cpu = process.cpuUsage(cpuAtStart);
  await removeRuntimePods(endpoint);
  runtime.close();
  images.close();
  return { wallMs: elapsed, cpuMs: (cpu.user + cpu.system) / 1000 };
}

interface KubeletRun {
  allStartedMs: number;
  /** This process's CPU from the first manifest written to the last container started: the kubelet's, the runtime runs apart. */
  startCpuMs: number;
  perPod: number[];
  allReportedMs: number;
  /** RuntimeService calls per pod from the first manifest written to the last pod reported Running (ImageService calls not counted). */
  runtimeCallsPerPod: number;
  relistMs?: number;
  rssMiB: number;
  cpuPercent: number;
}

/**
 * With BENCH_CPU_PROFILE=<dir>: a V8 CPU profile of the kubelet from the first manifest written to the last pod
 * reported Running, one file per run (open in Chrome DevTools or speedscope).
 */
async function startProfile(): Promise<{ stop(file: string): Promise<void> } | undefined> {
  if (!process.env.BENCH_CPU_PROFILE) return undefined;
  mkdirSync(process.env.BENCH_CPU_PROFILE, { recursive: true });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** Starts a kubelet on the runtime, writes N manifests, measures, then removes them and stops. */
/**
 * Simulated pods have no processes for a cgroup to hold: the simulated runs leave pod cgroups out. Room for 1,000
 * pods, past the default --max-pods of 110.
 */
const SIMULATED_FLAGS = ['--cgroups-per-qos=false', '--max-pods=1000'];

async function kubeletStart(endpoint: string, count: number, image: string, dir: string, prefix: string, steadyStateMs: number, extraFlags: string[] = []): Promise<KubeletRun> {
  const manifests = join(dir, `${prefix}-manifests`);
  mkdirSync(manifests, { recursive: true });
  const config = resolveConfig(
    parseFlags([`--pod-manifest-path=${manifests}`, `--root-dir=${join(dir, `${prefix}-root`)}`, `--pod-logs-dir=${join(dir, `${prefix}-logs`)}`, `--container-runtime-endpoint=${endpoint}`, '--hostname-override=bench', '--healthz-port=0', ...extraFlags]),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  if (process.env.BENCH_DEBUG) {
    const t0 = performance.now();
    const log = (level: string) => (msg: string, ...rest: unknown[]) => { if (/SyncLoop|Adding|relist/i.test(msg)) console.log(`${(performance.now() - ((globalThis as any).__start ?? t0)).toFixed(0)}ms ${level} ${msg} ${JSON.stringify(rest.at(-1))?.slice(0, 120)}`); };
    const logger: any = { info: log('I'), warn: log('W'), error: log('E'), v: () => ({ enabled: true, info: log('V') }), with: () => logger };
    c.register(Tokens.Logger, { useValue: logger });
  } else c.register(Tokens.Logger, { useValue: noopLogger });
  const recorder = new StartRecorder(count);
  c.register(Tokens.RuntimeService, { useValue: recorder.wrap(new RemoteRuntimeService({ endpoint, timeoutMs: config.runtimeRequestTimeoutMs })) });
  const controller = new AbortController();
  const running = await startKubelet(c, controller.signal);
  // Measure pod starts, not kubelet start-up: wait until the sync loop runs (past its start-up backoff).
  await pollUntil(() => running.kubelet.runtimeState.runtimeErrors().length === 0 && running.kubelet.syncLoopIterations > 0, 20, 30_000);

  const profiler = await startProfile();
  const writtenAt = new Map<string, number>();
  const start = performance.now();
  const cpuAtStart = process.cpuUsage();
  recorder.calls = 0;
  if (process.env.BENCH_DEBUG) { console.log('writing manifests'); (globalThis as any).__start = start; (globalThis as any).__rpc = new Map(); }
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`;
    writtenAt.set(`${name}-bench`, performance.now());
    writeFileSync(
      join(manifests, `${name}.json`),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }] },
      }),
    );
  }
  if (process.env.BENCH_DEBUG) console.log('manifests written after', (performance.now() - start).toFixed(0), 'ms');
  const startedAt = await recorder.all();
  const startCpu = process.cpuUsage(cpuAtStart);
  const startCpuMs = (startCpu.user + startCpu.system) / 1000;
  if (process.env.BENCH_DEBUG) console.log('kubelet CPU during start', ((startCpu.user + startCpu.system) / 1000).toFixed(0), 'ms');
  if (process.env.BENCH_DEBUG) { for (const [k, e] of (globalThis as any).__rpc ?? []) console.log(k, e.n, 'first', (e.first - start).toFixed(0), 'last', (e.last - start).toFixed(0), 'avg', (e.total / e.n).toFixed(1)); (globalThis as any).__rpc = new Map(); }
  const allStartedMs = Math.max(...startedAt.values()) - start;
  if (process.env.BENCH_DEBUG) console.log('write start', start.toFixed(0), 'first started', Math.min(...startedAt.values()).toFixed(0), 'last', Math.max(...startedAt.values()).toFixed(0));
  const perPod = [...startedAt.entries()].map(([pod, at]) => at - writtenAt.get(`${pod}`)!);
  await pollUntil(() => running.kubelet.podStatuses().filter((p) => p.status?.phase === 'Running').length === count, 5, 300_000);
  const allReportedMs = performance.now() - start;
  const runtimeCallsPerPod = (recorder.calls ?? 0) / count;
  recorder.calls = undefined;
  await profiler?.stop(join(process.env.BENCH_CPU_PROFILE ?? '', `${prefix}-${count}.cpuprofile`));

  // Steady state: everything running, nothing changing.
  const cpuBefore = process.cpuUsage();
  if (steadyStateMs === 0) {
    controller.abort();
    await running.done;
    await removeRuntimePods(endpoint);
    rmSync(manifests, { recursive: true, force: true });
    return { allStartedMs, startCpuMs, perPod, allReportedMs, runtimeCallsPerPod, rssMiB: 0, cpuPercent: 0 };
  }
  const wallBefore = performance.now();
  await new Promise((resolve) => setTimeout(resolve, steadyStateMs));
  const cpu = process.cpuUsage(cpuBefore);
  const cpuPercent = ((cpu.user + cpu.system) / 1000 / (performance.now() - wallBefore)) * 100;
  const rssMiB = process.memoryUsage().rss / 1024 / 1024;
  const pleg = c.resolve<GenericPLEG>(Tokens.PLEG);
  const relists = pleg.relistDurations?.() ?? [];
  const relistMs = relists.length ? percentile(relists.slice(-5), 50) : undefined;

  controller.abort();
  await running.done;
  await removeRuntimePods(endpoint);
  rmSync(manifests, { recursive: true, force: true });
  return { allStartedMs, startCpuMs, perPod, allReportedMs, runtimeCallsPerPod, relistMs, rssMiB, cpuPercent };
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
const dir = mkdtempSync(join(tmpdir(), 'kubelet-bench-'));
const podCounts = values.pods.split(',').map(Number);
const rounds = Number(values.rounds);
const sim = await startSimulatedRuntime(dir);
try {
  console.log('Pod start overhead: kubelet (manifest written -> containers started) / bare CRI calls it makes for the same pods, same run');
  for (const pods of podCounts) {
    // One warm-up round each, then alternating rounds; medians damp the noise of a shared 2-core machine.
    await bareStart(sim.endpoint, pods, IMAGE, join(dir, 'bare-logs'), 'warm');
    await kubeletStart(sim.endpoint, pods, IMAGE, dir, 'warm', 0, SIMULATED_FLAGS);
    const bareRuns: Array<{ wallMs: number; cpuMs: number }> = [];
    const kubeletRuns: KubeletRun[] = [];
    const eventedRuns: KubeletRun[] = [];
    const podRounds = pods > 110 ? Math.min(rounds, 3) : rounds;
    for (let round = 0; round < podRounds; round++) {
      bareRuns.push(await bareStart(sim.endpoint, pods, IMAGE, join(dir, 'bare-logs'), `bare${round}`));
      kubeletRuns.push(await kubeletStart(sim.endpoint, pods, IMAGE, dir, `ovh${round}`, 0, SIMULATED_FLAGS));
      eventedRuns.push(await kubeletStart(sim.endpoint, pods, IMAGE, dir, `evt${round}`, 0, [...SIMULATED_FLAGS, '--feature-gates=EventedPLEG=true']));
    }
    const bareMs = percentile(bareRuns.map((r) => r.wallMs), 50);
    const bareCpuPerPod = percentile(bareRuns.map((r) => r.cpuMs), 50) / pods;
    for (const [label, runs] of [['generic PLEG', kubeletRuns], ['evented PLEG', eventedRuns]] as const) {
      const kubeletMs = percentile(runs.map((r) => r.allStartedMs), 50);
      console.log(`  simulated runtime, ${pods} pods, ${label}, median of ${podRounds}: kubelet ${fmt(kubeletMs)}  bare CRI ${fmt(bareMs)}  ratio ${(kubeletMs / bareMs).toFixed(2)} (target <= ${pods > 110 ? 1.2 : 1.1})`);
      const kubeletCpuPerPod = percentile(runs.map((r) => r.startCpuMs), 50) / pods;
      console.log(`    CPU per pod start: kubelet ${kubeletCpuPerPod.toFixed(2)} ms, bare CRI client ${bareCpuPerPod.toFixed(2)} ms, ratio ${(kubeletCpuPerPod / bareCpuPerPod).toFixed(2)}`);
      // Independent of the machine's load: what the runtime is asked per pod (bare: RunPodSandbox, PodSandboxStatus, CreateContainer, StartContainer).
      console.log(`    RuntimeService calls per pod until reported Running: kubelet ${percentile(runs.map((r) => r.runtimeCallsPerPod), 50).toFixed(2)}, bare 4`);
      const lagMs = percentile(runs.map((r) => r.allReportedMs - r.allStartedMs), 50);
      const target = label === 'generic PLEG' ? 'target <= one relist period, 1000 ms' : `target <= ${pods > 110 ? 500 : 50} ms`;
      console.log(`    status lag (last container started -> last pod reported Running by the status manager): ${fmt(lagMs)} (${target})`);
    }
  }

  console.log('Density on the simulated runtime (runtime in its own process):');
  for (const count of values.density.split(',').map(Number)) {
    const run = await kubeletStart(sim.endpoint, count, IMAGE, dir, `d${count}`, 10_000, SIMULATED_FLAGS);
    console.log(
      `  ${String(count).padStart(5)} pods: start p50 ${fmt(percentile(run.perPod, 50))} p99 ${fmt(percentile(run.perPod, 99))}, all started ${fmt(run.allStartedMs)}, all reported Running ${fmt(run.allReportedMs)} (lag ${fmt(run.allReportedMs - run.allStartedMs)}), ` +
        `PLEG relist ${run.relistMs === undefined ? 'n/a' : fmt(run.relistMs)}, kubelet RSS ${run.rssMiB.toFixed(0)} MiB, steady-state CPU ${run.cpuPercent.toFixed(1)}% of one core`,
    );
  }
} finally {
  sim.process.kill('SIGTERM');
}

let containerd;
try {
  containerd = readContainerdEnv();
} catch (error) {
  console.log(`containerd: not measured (${(error as Error).message})`);
}
if (containerd && Number(values['containerd-pods']) > 0) {
  const count = Number(values['containerd-pods']);
  const scratch = mkdtempSync(join(containerd.root, 'bench-'));
  const bare: number[] = [];
  const kubelet: number[] = [];
  for (let round = 0; round < 3; round++) {
    bare.push((await bareStart(containerd.endpoint, count, containerd.busyboxImage, join(scratch, 'bare-logs'), `bare${round}`)).wallMs);
    // The kubelet refuses a --cgroup-root that does not exist, as Go's does.
    const cgroupRoot = `/kts-bench-ctd${round}`;
    await ensureHostCgroup(cgroupRoot);
    kubelet.push((await kubeletStart(containerd.endpoint, count, containerd.busyboxImage, scratch, `ctd${round}`, 0, [`--cgroup-root=${cgroupRoot}`])).allStartedMs);
    await removeHostCgroup(cgroupRoot).catch(() => undefined);
  }
  const k = percentile(kubelet, 50);
  const b = percentile(bare, 50);
  console.log(`  containerd, ${count} pods (bridge CNI), median of 3: kubelet ${fmt(k)}  bare CRI ${fmt(b)}  ratio ${(k / b).toFixed(2)}`);
  rmSync(scratch, { recursive: true, force: true });
}
rmSync(dir, { recursive: true, force: true });
