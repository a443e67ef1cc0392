// The eviction manager (Go: pkg/kubelet/eviction/eviction_manager.go managerImpl): watches the node's
// memory, disk and process ids through the Summary API, reports pressure conditions, reclaims node-level
// resources, and evicts one pod at a time when a threshold is met; admits pods under pressure as Go does.
import { stat } from 'node:fs/promises';
import type { V1ObjectReference, V1Pod, V1PodStatus, V1Toleration } from '@kubernetes/client-node';
import {
  errorText,
  formatEvictionThreshold,
  getPodQOS,
  isCriticalPod,
  isHardEvictionThreshold,
  noopEventRecorder,
  defaultLogger,
  podRef,
  Quantity,
  realClock,
  type Clock,
  type EventRecorder,
  type EvictionSignal,
  type EvictionThreshold,
  type Logger,
} from '@kubelet-ts/core';
import type { PodStats, Summary, SummarySource } from '@kubelet-ts/stats';
import {
  buildSignalToRankFunc,
  EVICTION_REASON,
  evictionMessage,
  podLimit,
  podLocalEphemeralStorageUsage,
  type FsStatsType,
  type RankFunc,
} from './ranking.js';
import {
  cachedStatsFunc,
  getReclaimableThreshold,
  makeSignalObservations,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  sortByEvictionPriority,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
  thresholdsUpdatedStats,
  type PressureCondition,
  type ReclaimResource,
  type SignalObservation,
  type SignalObservations,
  type StatsFunc,
} from './signals.js';

/** Go: evictionMonitoringPeriod. */
export const DEFAULT_EVICTION_MONITORING_INTERVAL_MS = 10_000;
/** Go: --eviction-pressure-transition-period default. */
export const DEFAULT_PRESSURE_TRANSITION_PERIOD_MS = 5 * 60_000;
/** Go: podCleanupTimeout. */
export const POD_CLEANUP_TIMEOUT_MS = 30_000;
/** Go: podCleanupPollFreq. */
export const POD_CLEANUP_POLL_MS = 1_000;
/** Go: v1.TaintNodeMemoryPressure. */
export const TAINT_NODE_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';

export interface EvictionManagerOptions {
  /** Where the stats come from (Go: stats.SummaryProvider); the manager calls get(true) each pass. */
  summaryProvider: SummarySource;
  /** From @kubelet-ts/core's parseThresholdConfig. */
  thresholds: EvictionThreshold[];
  /** --eviction-max-pod-grace-period: the grace period of evictions by soft thresholds. Default 0. */
  maxPodGracePeriodSeconds?: number;
  /** --eviction-pressure-transition-period: how long a pressure condition stays after its threshold clears. Default 5 min. */
  pressureTransitionPeriodMs?: number;
  /** How often start() synchronizes (Go: evictionMonitoringPeriod). Default 10 s. */
  monitoringIntervalMs?: number;
  /**
   * The machine's memory and node allocatable memory (capacity - reserved): fallbacks for memory.available's
   * capacity and allocatableMemory.available when the summary lacks the figure (see README).
   */
  capacity: () => { memoryBytes: number; allocatableMemoryBytes?: number };
  /** The pods the kubelet runs (Go: ActivePodsFunc). */
  activePods: () => V1Pod[];
  /** Go KillPodFunc: the kubelet terminates the pod (pod workers, evict), applying statusFn to the final status; resolves when the kill is done or fails. */
  killPod: (pod: V1Pod, gracePeriodOverrideSeconds: number, statusFn: (status: V1PodStatus) => void) => Promise<void>;
  /** Go podCleanedUpFunc, waited on after an eviction (podCleanupTimeout 30s, poll 1s). Default: cleaned up at once. */
  podCleanedUp?: (pod: V1Pod) => boolean;
  /** Node-level reclaim (Go ImageGC.DeleteUnusedImages / ContainerGC.DeleteAllUnusedContainers). */
  imageGC?: { deleteUnusedImages(): Promise<unknown> };
  containerGC?: { deleteAllUnusedContainers(): Promise<unknown> };
  /** Whether images live on a separate filesystem (Go dedicatedImageFs); default: node.fs and imageFs differ in capacity or inodes. */
  dedicatedImageFs?: boolean;
  /** The LocalStorageCapacityIsolation feature gate (on by default in 1.20): emptyDir and ephemeral-storage limit evictions. */
  localStorageCapacityIsolation?: boolean;
  /** The pod's etc-hosts file (Go: kl.getPodDir(uid)/etc-hosts), counted in its ephemeral storage. Default: not counted. */
  etcHostsPath?: (podUid: string) => string;
  /** The node events (EvictionThresholdMet) are reported on; default: no node events. */
  nodeRef?: V1ObjectReference;
  /** From @kubelet-ts/core. Default: no events. */
  recorder?: EventRecorder;
  clock?: Clock;
  logger?: Logger;
}

/** Go's lifecycle.PodAdmitResult. */
export interface EvictionAdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

type NodeReclaimFunc = { name: string; run: () => Promise<unknown> };

/** Go: TolerationsTolerateTaint for the memory-pressure NoSchedule taint. */
function toleratesMemoryPressure(tolerations: readonly V1Toleration[] | undefined): boolean {
  return (tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== 'NoSchedule') return false;
    if (t.key && t.key !== TAINT_NODE_MEMORY_PRESSURE) return false;
    if (!t.operator || t.operator === 'Equal') return (t.value ?? '') === '';
    return t.operator === 'Exists';
  });
}

const formatPods = (pods: readonly V1Pod[]): string => `[${pods.map(podRef).join(', ')}]`;

export class EvictionManager {
  private readonly summaryProvider: SummarySource;
  private readonly thresholds: EvictionThreshold[];
  private readonly maxPodGracePeriodSeconds: number;
  private readonly pressureTransitionPeriodMs: number;
  private readonly monitoringIntervalMs: number;
  private readonly capacity: EvictionManagerOptions['capacity'];
  private readonly activePods: () => V1Pod[];
  private readonly killPod: EvictionManagerOptions['killPod'];
  private readonly podCleanedUp: (pod: V1Pod) => boolean;
  private readonly imageGC: EvictionManagerOptions['imageGC'];
  private readonly containerGC: EvictionManagerOptions['containerGC'];
  private readonly localStorageCapacityIsolation: boolean;
  private readonly etcHostsPath: ((podUid: string) => string) | undefined;
  private readonly nodeRef: V1ObjectReference | undefined;
  private readonly recorder: EventRecorder;
  private readonly clock: Clock;
  private readonly logger: Logger;

  private dedicatedImageFs: boolean | undefined;
  private signalToRankFunc: Map<EvictionSignal, RankFunc> | undefined;
  private conditions: PressureCondition[] = [];
  private conditionsLastObservedAt = new Map<PressureCondition, number>();
  private firstObservedAt = new Map<EvictionThreshold, number>();
  private met: EvictionThreshold[] = [];
  private lastObservations: SignalObservations = new Map();
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(opts: EvictionManagerOptions) {
    this.summaryProvider = opts.summaryProvider;
    this.thresholds = [...opts.thresholds];
    this.maxPodGracePeriodSeconds = opts.maxPodGracePeriodSeconds ?? 0;
    this.pressureTransitionPeriodMs = opts.pressureTransitionPeriodMs ?? DEFAULT_PRESSURE_TRANSITION_PERIOD_MS;
    this.monitoringIntervalMs = opts.monitoringIntervalMs ?? DEFAULT_EVICTION_MONITORING_INTERVAL_MS;
    this.capacity = opts.capacity;
    this.activePods = opts.activePods;
    this.killPod = opts.killPod;
    this.podCleanedUp = opts.podCleanedUp ?? (() => true);
    this.imageGC = opts.imageGC;
    this.containerGC = opts.containerGC;
    this.dedicatedImageFs = opts.dedicatedImageFs;
    this.localStorageCapacityIsolation = opts.localStorageCapacityIsolation ?? true;
    this.etcHostsPath = opts.etcHostsPath;
    this.nodeRef = opts.nodeRef;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
  }

  /** Go's Start: synchronizes every monitoring interval; after an eviction waits for the pod's cleanup, then synchronizes again. */
  start(signal?: AbortSignal): void {
    if (this.loop) return;
    const abort = new AbortController();
    this.abort = abort;
    if (signal) {
      if (signal.aborted) abort.abort();
      else signal.addEventListener('abort', () => abort.abort(), { once: true, signal: abort.signal });
    }
    this.loop = this.run(abort.signal);
  }

  /** Stops the loop and waits for the pass in progress; no timers are left. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.loop;
    this.loop = undefined;
    this.abort = undefined;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let evicted: V1Pod[] = [];
      try {
        evicted = await this.synchronize();
      } catch (err) {
        this.logger.error('Eviction manager: synchronize failed', err);
      }
      try {
        if (evicted.length > 0) {
          this.logger.info('Eviction manager: pods evicted, waiting for pod to be cleaned up', { pods: formatPods(evicted) });
          await this.waitForPodsCleanup(evicted, signal);
        } else {
          await this.clock.sleep(this.monitoringIntervalMs, signal);
        }
      } catch {
        return; // aborted
      }
    }
  }

  /** Go's waitForPodsCleanup: polls podCleanedUp every second, for at most 30 s. */
  private async waitForPodsCleanup(pods: V1Pod[], signal: AbortSignal): Promise<void> {
    for (let waited = 0; ; ) {
      await this.clock.sleep(POD_CLEANUP_POLL_MS, signal);
      waited += POD_CLEANUP_POLL_MS;
      if (pods.every((pod) => this.podCleanedUp(pod))) {
        this.logger.info('Eviction manager: pods successfully cleaned up', { pods: formatPods(pods) });
        return;
      }
      if (waited >= POD_CLEANUP_TIMEOUT_MS) {
        this.logger.warn('Eviction manager: timed out waiting for pods to be cleaned up', { pods: formatPods(pods) });
        return;
      }
    }
  }

  isUnderMemoryPressure(): boolean {
    return this.conditions.includes('MemoryPressure');
  }

  isUnderDiskPressure(): boolean {
    return this.conditions.includes('DiskPressure');
  }

  isUnderPIDPressure(): boolean {
    return this.conditions.includes('PIDPressure');
  }

  /** The pressure conditions now reported (within the transition period). */
  nodeConditions(): PressureCondition[] {
    return [...this.conditions];
  }

  /** The last signal observations, for logs/metrics/tests. */
  observations(): ReadonlyMap<string, SignalObservation> {
    return this.lastObservations;
  }

  /**
   * Go's Admit: everything without pressure; critical pods always; under memory pressure alone, pods that
   * are not BestEffort or tolerate the memory-pressure taint; under any other pressure, nothing.
   */
  admit(attrs: { pod: V1Pod; otherPods?: V1Pod[] }): EvictionAdmitResult {
    const conditions = this.conditions;
    if (conditions.length === 0) return { admit: true };
    if (isCriticalPod(attrs.pod)) return { admit: true };
    if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
      if (getPodQOS(attrs.pod) !== 'BestEffort') return { admit: true };
      if (toleratesMemoryPressure(attrs.pod.spec?.tolerations)) return { admit: true };
    }
    const list = `[${conditions.join(' ')}]`;
    this.logger.warn('Failed to admit pod to node', { pod: podRef(attrs.pod), nodeCondition: list });
    return { admit: false, reason: EVICTION_REASON, message: `The node had condition: ${list}. ` };
  }

  /** One pass (Go synchronize): returns the pods it evicted (at most one, except for local storage limits). */
  async synchronize(): Promise<V1Pod[]> {
    if (this.thresholds.length === 0 && !this.localStorageCapacityIsolation) return [];
    this.logger.v(3).info('Eviction manager: synchronize housekeeping');
    const activePods = this.activePods();
    let summary: Summary;
    try {
      summary = await this.summaryProvider.get(true);
    } catch (err) {
      this.logger.error('Eviction manager: failed to get summary stats', err);
      return [];
    }
    const dedicatedImageFs = this.imageFsIsDedicated(summary);
    const signalToRankFunc = (this.signalToRankFunc ??= buildSignalToRankFunc(dedicatedImageFs));

    const capacity = this.capacity();
    const observations = makeSignalObservations(summary, capacity);
    const statsFunc = cachedStatsFunc(summary.pods);
    this.debugLogObservations('observations', observations);

    const warnMissing = (signal: EvictionSignal): void => this.logger.warn('Eviction manager: no observation found for eviction signal', { signal });
    let thresholds = thresholdsMet(this.thresholds, observations, false, warnMissing);
    if (this.met.length > 0) thresholds = mergeThresholds(thresholds, thresholdsMet(this.met, observations, true));

    const now = this.clock.now();
    const firstObservedAt = thresholdsFirstObservedAt(thresholds, this.firstObservedAt, now);
    const observedConditions = nodeConditions(thresholds);
    if (observedConditions.length > 0) this.logger.v(3).info('Eviction manager: node conditions - observed', { pressureConditions: observedConditions });
    const conditionsLastObservedAt = nodeConditionsLastObservedAt(observedConditions, this.conditionsLastObservedAt, now);
    const conditions = nodeConditionsObservedSince(conditionsLastObservedAt, this.pressureTransitionPeriodMs, now);
    if (conditions.length > 0) this.logger.v(3).info('Eviction manager: node conditions - transition period not met', { pressureConditions: conditions });

    thresholds = thresholdsMetGracePeriod(firstObservedAt, now);
    for (const [threshold, at] of firstObservedAt) {
      if (!thresholds.includes(threshold)) {
        this.logger.v(2).info('Eviction manager: eviction criteria not yet met', { threshold: formatEvictionThreshold(threshold), duration: `${(now - at) / 1000}s` });
      }
    }

    this.conditions = conditions;
    this.firstObservedAt = firstObservedAt;
    this.conditionsLastObservedAt = conditionsLastObservedAt;
    this.met = thresholds;
    thresholds = thresholdsUpdatedStats(thresholds, observations, this.lastObservations);
    this.lastObservations = observations;

    if (this.localStorageCapacityIsolation) {
      const evicted = await this.localStorageEviction(activePods, statsFunc, dedicatedImageFs);
      if (evicted.length > 0) return evicted;
    }

    if (thresholds.length === 0) {
      this.logger.v(3).info('Eviction manager: no resources are starved');
      return [];
    }

    const reclaimable = getReclaimableThreshold(sortByEvictionPriority(thresholds));
    if (!reclaimable) return [];
    const { threshold: thresholdToReclaim, resource: resourceToReclaim } = reclaimable;
    this.logger.warn('Eviction manager: attempting to reclaim', { resourceName: resourceToReclaim });
    if (this.nodeRef) this.recorder.event(this.nodeRef, 'Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resourceToReclaim}`);

    if (await this.reclaimNodeLevelResources(thresholdToReclaim.signal, resourceToReclaim, dedicatedImageFs, capacity)) {
      this.logger.info('Eviction manager: able to reduce resource pressure without evicting pods.', { resourceName: resourceToReclaim });
      return [];
    }
    this.logger.info('Eviction manager: must evict pod(s) to reclaim', { resourceName: resourceToReclaim });

    const rank = signalToRankFunc.get(thresholdToReclaim.signal);
    if (!rank) {
      this.logger.error('Eviction manager: no ranking function for signal', undefined, { signal: thresholdToReclaim.signal });
      return [];
    }
    if (activePods.length === 0) {
      this.logger.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    const ranked = [...activePods];
    rank(ranked, statsFunc);
    this.logger.info('Eviction manager: pods ranked for eviction', { pods: formatPods(ranked) });

    const gracePeriodOverride = isHardEvictionThreshold(thresholdToReclaim) ? 0 : this.maxPodGracePeriodSeconds;
    for (const pod of ranked) {
      const { message, annotations } = evictionMessage(resourceToReclaim, pod, statsFunc);
      if (await this.evictPod(pod, gracePeriodOverride, message, annotations)) return [pod];
    }
    this.logger.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /** Go's dedicatedImageFs: the option, else node.fs and imageFs compared once both are known. */
  private imageFsIsDedicated(summary: Summary): boolean {
    if (this.dedicatedImageFs !== undefined) return this.dedicatedImageFs;
    const nodeFs = summary.node.fs;
    const imageFs = summary.node.runtime?.imageFs;
    if (nodeFs?.capacityBytes === undefined || imageFs?.capacityBytes === undefined) return false; // not known yet: decide on a later pass
    this.dedicatedImageFs = nodeFs.capacityBytes !== imageFs.capacityBytes || (nodeFs.inodes !== undefined && imageFs.inodes !== undefined && nodeFs.inodes !== imageFs.inodes);
    this.signalToRankFunc = undefined;
    return this.dedicatedImageFs;
  }

  /** Go's buildSignalToNodeReclaimFuncs: container GC then image GC, for the filesystem images live on. */
  private nodeReclaimFuncs(signal: EvictionSignal, dedicatedImageFs: boolean): NodeReclaimFunc[] {
    const diskSignal = signal === 'nodefs.available' || signal === 'nodefs.inodesFree' || signal === 'imagefs.available' || signal === 'imagefs.inodesFree';
    if (!diskSignal) return [];
    if (dedicatedImageFs && signal.startsWith('nodefs.')) return [];
    const funcs: NodeReclaimFunc[] = [];
    const containerGC = this.containerGC;
    const imageGC = this.imageGC;
    if (containerGC) funcs.push({ name: 'containerGC', run: () => containerGC.deleteAllUnusedContainers() });
    if (imageGC) funcs.push({ name: 'imageGC', run: () => imageGC.deleteUnusedImages() });
    return funcs;
  }

  /** Go's reclaimNodeLevelResources: run the reclaim functions, re-observe, and report whether no threshold is met any more. */
  private async reclaimNodeLevelResources(
    signal: EvictionSignal,
    resource: ReclaimResource,
    dedicatedImageFs: boolean,
    capacity: ReturnType<EvictionManagerOptions['capacity']>,
  ): Promise<boolean> {
    const funcs = this.nodeReclaimFuncs(signal, dedicatedImageFs);
    for (const func of funcs) {
      try {
        await func.run();
      } catch (err) {
        this.logger.warn('Eviction manager: unexpected error when attempting to reduce resource pressure', { resourceName: resource, err: errorText(err) });
      }
    }
    if (funcs.length === 0) return false;
    let summary: Summary;
    try {
      summary = await this.summaryProvider.get(true);
    } catch (err) {
      this.logger.error('Eviction manager: failed to get summary stats after resource reclaim', err);
      return false;
    }
    const observations = makeSignalObservations(summary, capacity);
    this.debugLogObservations('observations after resource reclaim', observations);
    return thresholdsMet(this.thresholds, observations, false).length === 0;
  }

  /** Go's evictPod: never a critical pod; otherwise an Evicted event and the kill; true once the kill was attempted. */
  private async evictPod(pod: V1Pod, gracePeriodOverride: number, message: string, annotations?: Record<string, string>): Promise<boolean> {
    if (isCriticalPod(pod)) {
      this.logger.error('Eviction manager: cannot evict a critical pod', undefined, { pod: podRef(pod) });
      return false;
    }
    this.recorder.event(pod, 'Warning', EVICTION_REASON, message, annotations ? { annotations } : undefined);
    try {
      await this.killPod(pod, gracePeriodOverride, (status) => {
        status.phase = 'Failed';
        status.reason = EVICTION_REASON;
        status.message = message;
      });
      this.logger.info('Eviction manager: pod is evicted successfully', { pod: podRef(pod) });
    } catch (err) {
      this.logger.error('Eviction manager: pod failed to evict', err, { pod: podRef(pod) });
    }
    return true;
  }

  /** Go's localStorageEviction: pods over an emptyDir sizeLimit, their own or a container's ephemeral-storage limit. */
  private async localStorageEviction(pods: readonly V1Pod[], statsFunc: StatsFunc, dedicatedImageFs: boolean): Promise<V1Pod[]> {
    const evicted: V1Pod[] = [];
    for (const pod of pods) {
      const podStats = statsFunc(pod);
      if (!podStats) continue;
      if (
        (await this.emptyDirLimitEviction(podStats, pod)) ||
        (await this.podEphemeralStorageLimitEviction(podStats, pod, dedicatedImageFs)) ||
        (await this.containerEphemeralStorageLimitEviction(podStats, pod, dedicatedImageFs))
      ) {
        evicted.push(pod);
      }
    }
    return evicted;
  }

  private async emptyDirLimitEviction(podStats: PodStats, pod: V1Pod): Promise<boolean> {
    const usedByVolume = new Map<string, number>();
    for (const volume of podStats.volume ?? []) if (volume.name !== undefined && volume.usedBytes !== undefined) usedByVolume.set(volume.name, volume.usedBytes);
    for (const volume of pod.spec?.volumes ?? []) {
      const sizeLimit = volume.emptyDir?.sizeLimit;
      if (sizeLimit === undefined || sizeLimit === null) continue;
      const size = Quantity.fromJSON(sizeLimit);
      const used = usedByVolume.get(volume.name);
      if (used !== undefined && size.sign() === 1 && Quantity.fromValue(used, 'BinarySI').cmp(size) > 0) {
        return this.evictPod(pod, 0, `Usage of EmptyDir volume ${JSON.stringify(volume.name)} exceeds the limit ${JSON.stringify(size.toString())}. `);
      }
    }
    return false;
  }

  private async podEphemeralStorageLimitEviction(podStats: PodStats, pod: V1Pod, dedicatedImageFs: boolean): Promise<boolean> {
    const limit = podLimit(pod, 'ephemeral-storage');
    if (!limit) return false;
    const fsStatsSet: FsStatsType[] = dedicatedImageFs ? ['logs', 'localVolumeSource'] : ['root', 'logs', 'localVolumeSource'];
    let usage = podLocalEphemeralStorageUsage(podStats, pod, fsStatsSet).bytes;
    const uid = pod.metadata?.uid;
    if (this.etcHostsPath && uid) {
      const etcHosts = await stat(this.etcHostsPath(uid)).catch(() => undefined);
      if (etcHosts) usage += etcHosts.size;
    }
    if (Quantity.fromValue(usage, 'BinarySI').cmp(limit) > 0) {
      return this.evictPod(pod, 0, `Pod ephemeral local storage usage exceeds the total limit of containers ${limit.toString()}. `);
    }
    return false;
  }

  private async containerEphemeralStorageLimitEviction(podStats: PodStats, pod: V1Pod, dedicatedImageFs: boolean): Promise<boolean> {
    const limits = new Map<string, Quantity>();
    for (const container of pod.spec?.containers ?? []) {
      const limit = container.resources?.limits?.['ephemeral-storage'];
      if (limit === undefined) continue;
      const q = Quantity.fromJSON(limit);
      if (q.value() !== 0) limits.set(container.name, q);
    }
    if (limits.size === 0) return false;
    for (const cs of podStats.containers) {
      const limit = limits.get(cs.name);
      if (!limit) continue;
      const used = (cs.logs?.usedBytes ?? 0) + (dedicatedImageFs ? 0 : (cs.rootfs?.usedBytes ?? 0));
      if (limit.cmp(Quantity.fromValue(used, 'BinarySI')) < 0) {
        return this.evictPod(pod, 0, `Container ${cs.name} exceeded its local ephemeral storage limit ${JSON.stringify(limit.toString())}. `);
      }
    }
    return false;
  }

  private debugLogObservations(prefix: string, observations: SignalObservations): void {
    const v = this.logger.v(3);
    if (!v.enabled) return;
    for (const [signal, o] of observations) {
      v.info(`Eviction manager: ${prefix}`, { signal, available: o.availableBytes, capacity: o.capacityBytes, time: o.time ? new Date(o.time).toISOString() : undefined });
    }
  }
}
