import { setTimeout as sleep } from 'node:timers/promises';
import { Churn } from './churn.js';
import { sampleResources } from './invariants.js';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { acquireRuntimeLock, ChaosNode } from './node.js';
import { freePort } from './scenario.js';

export interface SoakOptions {
  durationMs: number;
  /** One sample per interval (the minute). */
  sampleEveryMs?: number;
  /** Samples before this are warm-up, left out of the growth rates (default: the first half of the run). */
  warmupMs?: number;
  maxReplicas?: number;
  log: (line: string) => void;
}

export interface SoakSample {
  atMs: number;
  rssBytes: number;
  fds: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** Active timers (nodejs_active_resources{type="Timeout"}). */
  timers: number;
  activeResources: number;
  /** The worst event-loop delay since the previous sample (nodejs_eventloop_lag_max_seconds), ms. */
  lagMaxMs: number;
  lagP99Ms: number;
  /** Event-loop utilization since the previous sample, 0..1. */
  utilization: number;
  pods: number;
  churnCycles: number;
}

export interface SoakResult {
  samples: SoakSample[];
  /** Least-squares slope per hour after warm-up. */
  growthPerHour: { rssMiB: number; heapUsedMiB: number; fds: number; timers: number };
  /** The target: no leak larger than 1 MiB/hour after warm-up (RSS and heap). */
  heldTarget: boolean;
  line: string;
}

/** One metric's value from Prometheus text; a label filter like `type="Timeout"`. */
export function metricValue(text: string, name: string, labels?: string): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (labels === undefined ? !rest.startsWith(' ') : !(rest.startsWith('{') && rest.includes(labels))) continue;
    return Number(rest.slice(rest.lastIndexOf(' ') + 1));
  }
  return Number.NaN;
}

/** Least-squares slope of y over x. */
export function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

const MiB = 1048576;
const HOUR = 3_600_000;

/**
 * Scenario 7, the soak: our kubelet on containerd with the churn Deployment running for `durationMs`; every minute its
 * RSS and fds (from /proc), heap, timers, event-loop lag and utilization (from its /metrics) are sampled and printed;
 * at the end the growth per hour after warm-up, by least squares.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const every = options.sampleEveryMs ?? 60_000;
  // Warm-up: the first half. The kubelet's bounded caches fill over the first ~700 churned pods (the event correlator's
  // LRUs of 4096 entries, as Go's, hold ~6 entries per pod: ~40 min of this churn), which is not a leak.
  const warmup = options.warmupMs ?? options.durationMs / 2;
  const release = await acquireRuntimeLock(readContainerdEnv(), 'chaos soak', options.log);
  try {
    return await soakLocked(options, every, warmup);
  } finally {
    release();
  }
}

async function soakLocked(options: SoakOptions, every: number, warmup: number): Promise<SoakResult> {
  const node = await ChaosNode.create({ node: 'chaos-soak', healthzPort: await freePort(), readOnlyPort: await freePort() });
  const churn = new Churn({ kubectl: node.kubectl, get: (path) => node.get(path), namespace: node.namespace, node: node.name, image: node.containerd.busyboxImage, maxReplicas: options.maxReplicas ?? 30, log: () => undefined });
  const samples: SoakSample[] = [];
  const started = Date.now();
  try {
    await node.start();
    await churn.start();
    while (Date.now() - started < options.durationMs) {
      await sleep(Math.min(every, options.durationMs - (Date.now() - started)));
      const text = (await node.metrics()) ?? '';
      const resources = sampleResources(node.kubelet.pid);
      const sample: SoakSample = {
        atMs: Date.now() - started,
        ...resources,
        heapUsedBytes: metricValue(text, 'nodejs_heap_size_used_bytes'),
        heapTotalBytes: metricValue(text, 'nodejs_heap_size_total_bytes'),
        timers: metricValue(text, 'nodejs_active_resources', 'type="Timeout"'),
        activeResources: metricValue(text, 'nodejs_active_resources_total'),
        lagMaxMs: metricValue(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
        lagP99Ms: metricValue(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        utilization: metricValue(text, 'nodejs_eventloop_utilization_ratio'),
        pods: (await churn.pods().catch(() => [])).length,
        churnCycles: churn.stats.cycles,
      };
      samples.push(sample);
      options.log(
        `soak ${(sample.atMs / 60_000).toFixed(0)} min: RSS ${(sample.rssBytes / MiB).toFixed(1)} MiB, heap ${(sample.heapUsedBytes / MiB).toFixed(1)}/${(sample.heapTotalBytes / MiB).toFixed(1)} MiB, ` +
          `fds ${sample.fds}, timers ${sample.timers}, resources ${sample.activeResources}, loop lag max ${sample.lagMaxMs.toFixed(0)} ms p99 ${sample.lagP99Ms.toFixed(0)} ms, ` +
          `utilization ${(sample.utilization * 100).toFixed(0)}%, ${sample.pods} pods, ${sample.churnCycles} churn cycles`,
      );
    }
  } finally {
    await churn.stop().catch(() => undefined);
    await node.destroy();
  }
  const after = samples.filter((sample) => sample.atMs >= warmup);
  // A sample whose /metrics did not answer in time (a loaded machine) has NaN there: left out of that figure.
  const perHour = (value: (s: SoakSample) => number) =>
    slope(after.map((s): [number, number] => [s.atMs / HOUR, value(s)]).filter(([, y]) => Number.isFinite(y)));
  const growthPerHour = {
    rssMiB: perHour((s) => s.rssBytes / MiB),
    heapUsedMiB: perHour((s) => s.heapUsedBytes / MiB),
    fds: perHour((s) => s.fds),
    timers: perHour((s) => s.timers),
  };
  const heldTarget = growthPerHour.rssMiB <= 1 && growthPerHour.heapUsedMiB <= 1;
  const line =
    `chaos soak: ${(options.durationMs / 60_000).toFixed(0)} min of churn (${churn.stats.cycles} cycles, ${churn.stats.podsSeen.size} pods), ${samples.length} samples, ` +
    `growth per hour after ${(warmup / 60_000).toFixed(0)} min warm-up: RSS ${growthPerHour.rssMiB.toFixed(2)} MiB, heap ${growthPerHour.heapUsedMiB.toFixed(2)} MiB, ` +
    `fds ${growthPerHour.fds.toFixed(1)}, timers ${growthPerHour.timers.toFixed(1)}; target <= 1 MiB/h: ${heldTarget ? 'met' : 'NOT met'}`;
  return { samples, growthPerHour, heldTarget, line };
}
