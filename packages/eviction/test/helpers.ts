import type { V1Pod, V1Toleration, V1Volume } from '@kubernetes/client-node';
import { parseThresholdConfig, type EvictionThreshold } from '@kubelet-ts/core';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { EvictionManager, type EvictionManagerOptions } from '../src/index.js';
import { buildSummary, FakePodKiller, FakeSummaryProvider, type NodeFigures, type PodFigures } from '../src/testing.js';

export const Mi = 2 ** 20;
export const Gi = 2 ** 30;
export const T0 = Date.parse('2026-01-01T00:00:00Z');

export interface PodInit {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
  priority?: number;
  annotations?: Record<string, string>;
  tolerations?: V1Toleration[];
  volumes?: V1Volume[];
  /** More containers (named), with their requests. */
  containers?: Record<string, { requests?: Record<string, string>; limits?: Record<string, string> }>;
}

/** A pod with one container `app` (or the given ones), uid `uid-<name>`. */
export function pod(name: string, init: PodInit = {}): V1Pod {
  const containers = init.containers
    ? Object.entries(init.containers).map(([n, c]) => ({ name: n, image: 'busybox', resources: { requests: c.requests, limits: c.limits } }))
    : [{ name: 'app', image: 'busybox', resources: { requests: init.requests, limits: init.limits } }];
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: init.annotations },
    spec: { containers, priority: init.priority, tolerations: init.tolerations, volumes: init.volumes },
  };
}

/** A node with plenty of everything; override what a test needs. */
export function node(over: NodeFigures = {}): NodeFigures {
  return {
    memory: { availableBytes: 8 * Gi, workingSetBytes: 8 * Gi },
    nodeFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000 },
    imageFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000 },
    rlimit: { maxpid: 100_000, curproc: 1000 },
    ...over,
  };
}

export interface Harness {
  clock: FakeClock;
  stats: FakeSummaryProvider;
  killer: FakePodKiller;
  recorder: RecordingEventRecorder;
  logger: RecordingLogger;
  manager: EvictionManager;
  pods: V1Pod[];
  /** Sets the summary, stamped with the clock's current time. */
  set(node: NodeFigures, pods?: Array<[V1Pod, PodFigures?]>): void;
}

/** A manager over fakes; thresholds as Go's maps (hard, soft, grace periods, min reclaim). */
export function harness(
  thresholds: EvictionThreshold[] | { hard?: Record<string, string>; soft?: Record<string, string>; grace?: Record<string, string>; minReclaim?: Record<string, string>; allocatable?: string[] },
  opts: Partial<EvictionManagerOptions> = {},
): Harness {
  const clock = new FakeClock(T0);
  const stats = new FakeSummaryProvider(buildSummary(node(), [], T0));
  const killer = new FakePodKiller();
  const recorder = new RecordingEventRecorder();
  const logger = new RecordingLogger();
  const pods: V1Pod[] = [];
  const parsed = Array.isArray(thresholds)
    ? thresholds
    : parseThresholdConfig(thresholds.allocatable ?? [], thresholds.hard ?? {}, thresholds.soft, thresholds.grace, thresholds.minReclaim);
  const manager = new EvictionManager({
    summaryProvider: stats,
    thresholds: parsed,
    capacity: () => ({ memoryBytes: 16 * Gi }),
    activePods: () => pods,
    killPod: killer.killPod,
    recorder,
    logger,
    clock,
    nodeRef: { kind: 'Node', name: 'node-1', uid: 'node-1', namespace: '' },
    ...opts,
  });
  return {
    clock,
    stats,
    killer,
    recorder,
    logger,
    manager,
    pods,
    set(n, p = []) {
      pods.splice(0, pods.length, ...p.map(([x]) => x));
      stats.summary = buildSummary(n, p, clock.now());
    },
  };
}
