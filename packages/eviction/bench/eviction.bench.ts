// Cost of one eviction manager pass: `npm run bench -w @kubelet-ts/eviction`.
//
// 110 and 1,000 pods on a simulated summary (no runtime, no cgroups): a pass under memory pressure
// (observations, thresholds, local storage checks, ranking every pod, one eviction) and a quiet pass
// (no threshold met). Each is printed as a ratio against two references measured in the same run:
// building the summary object for those pods, and sorting the pods alone by a precomputed number.
// The summary source hands out the prebuilt summary with a newer time each pass, so every pass acts
// on fresh stats, as in production. Figures only, no thresholds.
import { performance } from 'node:perf_hooks';
import type { V1Pod } from '@kubernetes/client-node';
import { formatTime, parseThresholdConfig } from '@kubelet-ts/core';
import { FakeClock } from '@kubelet-ts/core/testing';
import type { Summary, SummarySource } from '@kubelet-ts/stats';
import { EvictionManager } from '../src/index.js';
import { buildSummary, type NodeFigures, type PodFigures } from '../src/testing.js';

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const RUNS = Number(process.env.RUNS ?? 200);

function makePods(n: number): Array<[V1Pod, PodFigures]> {
  return Array.from({ length: n }, (_, i) => {
    const qos = i % 3;
    const resources = qos === 0 ? {} : qos === 1 ? { requests: { memory: '128Mi', cpu: '100m' } } : { requests: { memory: '256Mi', cpu: '250m' }, limits: { memory: '256Mi', cpu: '250m' } };
    const pod: V1Pod = {
      metadata: { name: `pod-${i}`, namespace: 'bench', uid: `uid-${i}` },
      spec: {
        priority: i % 10 === 0 ? 1000 : 0,
        containers: [{ name: 'app', image: 'busybox', resources }],
        volumes: [{ name: 'cache', emptyDir: {} }],
      },
    };
    return [pod, { memoryBytes: (50 + (i % 300)) * Mi, rootfsBytes: (i % 50) * Mi, logsBytes: Mi, volumes: { cache: Mi }, processes: 1 + (i % 20) }];
  });
}

const pressure: NodeFigures = {
  memory: { availableBytes: 200 * Mi, workingSetBytes: 60 * Gi },
  nodeFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000 },
  imageFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000 },
  rlimit: { maxpid: 4_194_304, curproc: 2000 },
};
const quiet: NodeFigures = { ...pressure, memory: { availableBytes: 30 * Gi, workingSetBytes: 30 * Gi } };

/** Serves one summary, re-stamping the node figures so every pass sees fresh stats. */
class StampedSummary implements SummarySource {
  constructor(
    private readonly summary: Summary,
    private readonly clock: FakeClock,
  ) {}
  async get(): Promise<Summary> {
    const time = formatTime(this.clock.now());
    const node = this.summary.node;
    for (const figures of [node.memory, node.fs, node.runtime?.imageFs, node.rlimit]) if (figures) figures.time = time;
    return this.summary;
  }
  async getCPUAndMemoryStats(): Promise<Summary> {
    return this.summary;
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timeIt(runs: number, fn: () => unknown): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

async function measure(n: number): Promise<Record<string, number>> {
  const pods = makePods(n);
  const active = pods.map(([p]) => p);
  const passUs = async (figures: NodeFigures): Promise<number> => {
    const clock = new FakeClock();
    const manager = new EvictionManager({
      summaryProvider: new StampedSummary(buildSummary(figures, pods, clock.now()), clock),
      thresholds: parseThresholdConfig(['pods']),
      capacity: () => ({ memoryBytes: 64 * Gi }),
      activePods: () => active,
      killPod: async () => undefined,
      clock,
    });
    return (
      (await timeIt(RUNS, async () => {
        clock.step(10_000);
        await manager.synchronize();
      })) * 1000
    );
  };
  const evictUs = await passUs(pressure);
  const quietUs = await passUs(quiet);
  const summaryUs = (await timeIt(RUNS, () => buildSummary(pressure, pods))) * 1000;
  const keys = active.map((_, i) => (i * 7919) % n);
  const sortUs = (await timeIt(RUNS, () => active.map((p, i) => ({ p, k: keys[i] })).sort((a, b) => a.k - b.k))) * 1000;
  return { evictUs, quietUs, summaryUs, sortUs, rssMiB: process.memoryUsage().rss / Mi };
}

await measure(110); // warm-up
console.log(`Eviction manager pass (median of ${RUNS}), memory.available under its hard threshold vs quiet`);
console.log(['pods', 'evict µs', 'quiet µs', 'summary µs', 'sort µs', 'evict/summary', 'evict/sort', 'quiet/summary', 'RSS MiB'].map((s, i) => (i === 0 ? s.padEnd(6) : s.padStart(14))).join(''));
for (const n of [110, 1_000]) {
  const r = await measure(n);
  console.log(
    [
      String(n).padEnd(6),
      r.evictUs.toFixed(0),
      r.quietUs.toFixed(0),
      r.summaryUs.toFixed(0),
      r.sortUs.toFixed(0),
      `${(r.evictUs / r.summaryUs).toFixed(2)}x`,
      `${(r.evictUs / r.sortUs).toFixed(1)}x`,
      `${(r.quietUs / r.summaryUs).toFixed(2)}x`,
      r.rssMiB.toFixed(0),
    ]
      .map((s, i) => (i === 0 ? s : s.padStart(14)))
      .join(''),
  );
}
console.log('summary: building the simulated summary object for the pods; sort: sorting the pods alone by a number');
