// Benchmark: one SharedPodWatch feeding NODES nodes with PODS_PER_NODE pods each (default 1,000 x 10).
//  - heap per node source (NodePodSource alone), and per node with its PodConfig (makePodSourceConfig);
//  - time to the first SET of every node after the list;
//  - CPU per watch event (a status change of one pod; BURST events per turn of the event loop, default 1),
//    alone and through the node's PodConfig, and the same with 10 nodes. HOT_NODES=10 changes only 10
//    nodes' pods whatever NODES is: the same events with 10 or 1,000 subscribers cost the same.
// Figures only, no thresholds. Run: npm run bench:shared -w @kubelet-ts/pod-config
import { performance } from 'node:perf_hooks';
import type { V1Pod } from '@kubernetes/client-node';
import { noopLogger, type PodUpdate } from '@kubelet-ts/core';
import { SharedPodWatch, makePodSourceConfig, type PodListerWatcher, type PodWatchEvent, type PodSourceConfig } from '../src/index.js';
import { drainUpdates, makeTestPod } from '../src/testing.js';

const NODES = Number(process.env.NODES ?? 1000);
const PODS_PER_NODE = Number(process.env.PODS_PER_NODE ?? 10);
const EVENTS = Number(process.env.EVENTS ?? 20_000);
/** Events handed over before the event loop turns (one SET per node per burst). */
const BURST = Number(process.env.BURST ?? 1);
/** Only the pods of the first HOT_NODES nodes change (default: every node's): the same events with more subscribers. */
const HOT_NODES = process.env.HOT_NODES ? Number(process.env.HOT_NODES) : undefined;

const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};
const kib = (bytes: number): string => (bytes / 1024).toFixed(1);
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Lists the given pods, then hands out the open watch's onEvent. */
class BenchListerWatcher implements PodListerWatcher {
  onEvent: ((e: PodWatchEvent) => void) | undefined;
  constructor(private readonly pods: V1Pod[]) {}
  async list(): Promise<{ pods: V1Pod[]; resourceVersion: string }> {
    return { pods: this.pods, resourceVersion: '1' };
  }
  watch(_opts: unknown, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.onEvent = onEvent;
    return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  }
}

function fleetPods(nodes: number): V1Pod[] {
  const pods: V1Pod[] = [];
  for (let n = 0; n < nodes; n++) {
    for (let i = 0; i < PODS_PER_NODE; i++) {
      const p = makeTestPod({ name: `pod-${n}-${i}`, nodeName: `fleet-${n}`, labels: { app: 'bench' } });
      p.metadata!.resourceVersion = '1';
      pods.push(p);
    }
  }
  return pods;
}

async function run(nodes: number, withPodConfig: boolean): Promise<{ heapPerNodeKiB: string; firstSetMs: string; usPerEvent: string; cpuUsPerEvent: string }> {
  const pods = fleetPods(nodes);
  const lw = new BenchListerWatcher(pods);
  const watch = new SharedPodWatch({ listerWatcher: lw, logger: noopLogger });
  let sets = 0;
  const sink = async (_u: PodUpdate): Promise<void> => {
    sets++;
  };
  watch.start();
  while (!lw.onEvent) await settle();
  const before = heap();
  const configs: PodSourceConfig[] = [];
  const t0 = performance.now();
  for (let n = 0; n < nodes; n++) {
    if (withPodConfig) configs.push(makePodSourceConfig({ nodeName: `fleet-${n}`, sharedPodWatch: watch, logger: noopLogger }));
    else watch.nodeSource({ nodeName: `fleet-${n}`, sink, logger: noopLogger }).start();
  }
  const setsOf = (): number => (withPodConfig ? watch.stats().sets : sets);
  while (setsOf() < nodes) await settle();
  const firstSetMs = performance.now() - t0;
  for (const c of configs) drainUpdates(c.podConfig);
  const heapPerNode = (heap() - before) / nodes;

  // Status changes of pods spread over the nodes, in bursts of BURST (one SET per node per burst).
  let rv = 1;
  const cpu0 = process.cpuUsage();
  const t1 = performance.now();
  const touched = new Set<number>();
  for (let e = 0; e < EVENTS; ) {
    for (let b = 0; b < BURST && e < EVENTS; b++, e++) {
      const i = (e * 7919) % (HOT_NODES ? Math.min(pods.length, HOT_NODES * PODS_PER_NODE) : pods.length);
      const src = pods[i];
      const p: V1Pod = { ...src, metadata: { ...src.metadata, resourceVersion: String(++rv) }, status: { phase: e % 2 ? 'Running' : 'Pending' } };
      lw.onEvent?.({ type: 'MODIFIED', object: p });
      touched.add(Math.floor(i / PODS_PER_NODE));
    }
    await settle();
    // The kubelet's sync loop takes the updates: here, only the nodes that changed have any.
    for (const n of touched) if (configs[n]) drainUpdates(configs[n].podConfig);
    touched.clear();
  }
  const elapsed = performance.now() - t1;
  const cpu = process.cpuUsage(cpu0);
  for (const c of configs) await c.stop();
  await watch.stop();
  return {
    heapPerNodeKiB: kib(heapPerNode),
    firstSetMs: firstSetMs.toFixed(1),
    usPerEvent: ((elapsed * 1000) / EVENTS).toFixed(2),
    cpuUsPerEvent: ((cpu.user + cpu.system) / EVENTS).toFixed(2),
  };
}

// Each case runs in a child process of its own, so that one case's garbage is not counted in another's heap.
const cases: [number, boolean][] = [
  [10, false],
  [NODES, false],
  [10, true],
  [NODES, true],
];
if (process.env.BENCH_CASE !== undefined) {
  const [nodes, withPodConfig] = cases[Number(process.env.BENCH_CASE)];
  const row = { nodes, what: withPodConfig ? 'node source + PodConfig' : 'node source alone', ...(await run(nodes, withPodConfig)) };
  process.stdout.write(JSON.stringify(row));
} else {
  const { execFileSync } = await import('node:child_process');
  if (!gc) console.log('(run with node --expose-gc for heap figures)');
  console.log(`${NODES} nodes x ${PODS_PER_NODE} pods, ${EVENTS} watch events (pod status changes, bursts of ${BURST})`);
  const rows = cases.map((_, i) =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, process.argv[1]], { env: { ...process.env, BENCH_CASE: String(i) }, encoding: 'utf8' })) as Record<string, unknown>,
  );
  console.table(rows);
}
