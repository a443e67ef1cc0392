import {
  forEachLimit,
  formatDuration,
  defaultLogger,
  PodCache,
  realClock,
  type Clock,
  type ContainerRuntime,
  type ContainerState,
  type Logger,
  type PodLifecycleEvent,
  type PodStatus,
  type RuntimePod,
  until,
} from '@kubelet-ts/core';
import { EventChannel } from './event-channel.js';
import {
  GENERIC_PLEG_RELIST_PERIOD_MS,
  GENERIC_PLEG_RELIST_THRESHOLD_MS,
  PLEG_CHANNEL_CAPACITY,
  type PlegHealth,
  type PodLifecycleEventGenerator,
  type UpdateCacheResult,
  type WatchOptions,
} from './types.js';

/**
 * A container's state as the PLEG compares it (Go: plegContainerState): the runtime states plus
 * "non-existent" for a container absent from one of the two listings.
 */
export type PlegContainerState = 'running' | 'exited' | 'unknown' | 'non-existent';

/** Go convertState: 'created' is not used by the kubelet and counts as 'unknown'. */
export function convertState(state: ContainerState): PlegContainerState {
  switch (state) {
    case 'running':
      return 'running';
    case 'exited':
      return 'exited';
    case 'created':
    case 'unknown':
      return 'unknown';
    default:
      throw new Error(`unrecognized container state: ${String(state)}`);
  }
}

/**
 * The events for one container moving from oldState to newState (Go: generateEvents). The result
 * depends on the new state only, except for disappearing containers: exited -> non-existent is a
 * plain ContainerRemoved (its death was already reported), any other -> non-existent is
 * ContainerDied + ContainerRemoved. ContainerChanged (-> unknown) is computed but not emitted by
 * the relist, as in Go.
 */
export function generateEvents(podId: string, containerId: string, oldState: PlegContainerState, newState: PlegContainerState): PodLifecycleEvent[] {
  if (newState === oldState) return [];
  switch (newState) {
    case 'running':
      return [{ id: podId, type: 'ContainerStarted', data: containerId }];
    case 'exited':
      return [{ id: podId, type: 'ContainerDied', data: containerId }];
    case 'unknown':
      return [{ id: podId, type: 'ContainerChanged', data: containerId }];
    case 'non-existent':
      if (oldState === 'exited') return [{ id: podId, type: 'ContainerRemoved', data: containerId }];
      return [
        { id: podId, type: 'ContainerDied', data: containerId },
        { id: podId, type: 'ContainerRemoved', data: containerId },
      ];
    default:
      throw new Error(`unrecognized container state: ${String(newState)}`);
  }
}

/**
 * A pod's containers and sandboxes (Go treats sandboxes as containers here) as a flat list of
 * `id, state, id, state, ...`, which is what a pod record keeps of the previous listing. Compact and
 * contiguous, so comparing the next listing against it touches little memory; with thousands of
 * pods the relist is bound by memory access, not by the comparisons.
 */
export type ContainerStateList = string[];

export function containerStateList(pod: RuntimePod | undefined): ContainerStateList {
  const list: string[] = [];
  if (!pod) return list;
  for (const c of pod.containers) list.push(c.id.id, convertState(c.state));
  for (const s of pod.sandboxes) list.push(s.id.id, convertState(s.state));
  return list;
}

/**
 * The steady-state fast path: the listing holds the same ids in the same order with the same PLEG
 * states as the previous one, so there is nothing to report. Allocates nothing.
 */
function unchanged(old: ContainerStateList | undefined, pod: RuntimePod | undefined): boolean {
  if (!old || !pod) return old === undefined && pod === undefined;
  const { containers, sandboxes } = pod;
  if (old.length !== 2 * (containers.length + sandboxes.length)) return false;
  let i = 0;
  for (const c of containers) {
    if (old[i] !== c.id.id || old[i + 1] !== convertState(c.state)) return false;
    i += 2;
  }
  for (const s of sandboxes) {
    if (old[i] !== s.id.id || old[i + 1] !== convertState(s.state)) return false;
    i += 2;
  }
  return true;
}

/** id -> state; the first occurrence wins (as Go, a container shadows a sandbox with the same id). */
function stateMap(list: ContainerStateList): Map<string, PlegContainerState> {
  const states = new Map<string, PlegContainerState>();
  for (let i = 0; i < list.length; i += 2) if (!states.has(list[i])) states.set(list[i], list[i + 1] as PlegContainerState);
  return states;
}

/**
 * Every event between the previous listing of a pod (as a state list) and the current one, in Go's
 * order: the previous containers first, then the new ones. Linear in the number of containers (Go's
 * FindContainerByID per container is quadratic within a pod).
 */
export function computeEventsFromStates(podId: string, old: ContainerStateList | undefined, pod: RuntimePod | undefined): PodLifecycleEvent[] {
  if (unchanged(old, pod)) return [];
  const oldStates = stateMap(old ?? []);
  const newStates = stateMap(containerStateList(pod));
  const events: PodLifecycleEvent[] = [];
  for (const [cid, oldState] of oldStates) {
    events.push(...generateEvents(podId, cid, oldState, newStates.get(cid) ?? 'non-existent'));
  }
  for (const [cid, newState] of newStates) {
    if (!oldStates.has(cid)) events.push(...generateEvents(podId, cid, 'non-existent', newState));
  }
  return events;
}

/** Every event between two listings of one pod (Go: computeEvents over getContainersFromPods). */
export function computePodEvents(podId: string, oldPod: RuntimePod | undefined, newPod: RuntimePod | undefined): PodLifecycleEvent[] {
  return computeEventsFromStates(podId, oldPod ? containerStateList(oldPod) : undefined, newPod);
}

/**
 * Go getPodIPs: keeps the previously cached IPs when the new status has none and no sandbox is
 * ready, because the API expects a finished pod to keep its IP after network teardown.
 */
export function preservePodIPs(cache: PodCache, uid: string, status: PodStatus): string[] {
  if (status.ips.length > 0) return status.ips;
  const old = cache.get(uid);
  if (old.error || old.status.ips.length === 0) return [];
  if (status.sandboxStatuses.some((s) => s.state === 'SANDBOX_READY')) return status.ips;
  return old.status.ips;
}

interface PodRecord {
  /** What the last reported listing held (Go keeps the whole pod; the states are all it compares). */
  old: ContainerStateList | undefined;
  current: RuntimePod | undefined;
}

export interface GenericPLEGOptions {
  runtime: ContainerRuntime;
  cache: PodCache;
  clock?: Clock;
  logger?: Logger;
  /** Default 1 s (Go genericPlegRelistPeriod). */
  relistPeriodMs?: number;
  /** healthy() turns false when no relist completed for longer than this. Default 3 min. */
  relistThresholdMs?: number;
  /** Capacity of the watch channel; a full channel drops events. Default 1000 (Go plegChannelCapacity). */
  channelCapacity?: number;
  /** Share a channel with another generator (the evented PLEG shares the generic PLEG's). */
  eventChannel?: EventChannel<PodLifecycleEvent>;
  /** Called with each relist's wall duration in ms (Go: pleg_relist_duration_seconds). */
  onRelistDuration?: (durationMs: number) => void;
  /**
   * Called as a relist starts with the time in ms since the last relist that listed the pods, once there was one
   * (Go: pleg_relist_interval_seconds).
   */
  onRelistInterval?: (intervalMs: number) => void;
  /**
   * Called with every pod a relist listed from the runtime, before the cache is updated (Go:
   * updateRunningPodAndContainerMetrics, for kubelet_running_pods and kubelet_running_containers).
   */
  onPodsListed?: (pods: readonly RuntimePod[]) => void;
  /** How many recent relist durations relistDurations() keeps. Default 100. */
  relistDurationSamples?: number;
  /**
   * How many changed pods a relist inspects at once. Default 16. Go inspects them one after the other; a round trip
   * to the runtime costs this process little CPU but real time, and 1,000 pods changing at once made the last one's
   * status wait seconds.
   */
  inspectionConcurrency?: number;
}

/** The relisting period and health threshold (Go: RelistDuration). */
export interface RelistDuration {
  relistPeriodMs: number;
  relistThresholdMs: number;
}

/**
 * The generic PLEG (Go: pkg/kubelet/pleg/generic.go): lists every pod from the runtime each
 * relistPeriod, compares each container's state with the previous listing, inspects pods that
 * changed (runtime.getPodStatus) into the PodCache, and emits lifecycle events. After a full
 * relist the cache's global timestamp moves to the relist's start, which unblocks pod workers
 * waiting in getNewerThan.
 *
 * It assumes a container is not created, finished and removed within one period; such a
 * container is missed entirely (the kubelet's periodic resync is the safety net).
 */
export class GenericPLEG implements PodLifecycleEventGenerator {
  readonly eventChannel: EventChannel<PodLifecycleEvent>;
  private readonly runtime: ContainerRuntime;
  private readonly cache: PodCache;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly onRelistDuration?: (durationMs: number) => void;
  private readonly onRelistInterval?: (intervalMs: number) => void;
  private readonly onPodsListed?: (pods: readonly RuntimePod[]) => void;
  private readonly maxDurationSamples: number;
  private readonly inspectionConcurrency: number;
  private duration: RelistDuration;
  private readonly podRecords = new Map<string, PodRecord>();
  private podsToReinspect = new Map<string, RuntimePod | undefined>();
  private relistTime: number | undefined;
  private relistQueue: Promise<void> = Promise.resolve();
  private controller: AbortController | undefined;
  private readonly loops = new Set<Promise<void>>();
  private eventedInUse = false;
  private readonly durationSamples: number[] = [];
  private lastDuration: number | undefined;
  private relistCount = 0;

  constructor(opts: GenericPLEGOptions) {
    if (!opts.cache) throw new Error('cache cannot be nil');
    this.runtime = opts.runtime;
    this.cache = opts.cache;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.duration = {
      relistPeriodMs: opts.relistPeriodMs ?? GENERIC_PLEG_RELIST_PERIOD_MS,
      relistThresholdMs: opts.relistThresholdMs ?? GENERIC_PLEG_RELIST_THRESHOLD_MS,
    };
    this.eventChannel = opts.eventChannel ?? new EventChannel<PodLifecycleEvent>(opts.channelCapacity ?? PLEG_CHANNEL_CAPACITY);
    this.onRelistDuration = opts.onRelistDuration;
    this.onRelistInterval = opts.onRelistInterval;
    this.onPodsListed = opts.onPodsListed;
    this.maxDurationSamples = opts.relistDurationSamples ?? 100;
    this.inspectionConcurrency = opts.inspectionConcurrency ?? 16;
  }

  watch(options: WatchOptions = {}): AsyncIterable<PodLifecycleEvent> {
    return this.eventChannel.iterate(options.signal);
  }

  get droppedEvents(): number {
    return this.eventChannel.dropped;
  }

  /** True while the relist loop runs. */
  get running(): boolean {
    return this.controller !== undefined;
  }

  /** The relist period and threshold in effect. */
  get relistDuration(): RelistDuration {
    return { ...this.duration };
  }

  start(): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    const loop = until(() => this.relist(), this.duration.relistPeriodMs, controller.signal, this.clock, {
      logger: this.logger,
      name: 'pleg-relist',
    });
    this.loops.add(loop);
    void loop.finally(() => this.loops.delete(loop));
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    this.controller = undefined;
    await Promise.all([...this.loops]);
    // A relist() called directly (not by the loop) may still run: wait for it too.
    await this.relistQueue;
  }

  /**
   * Changes the period and threshold (Go: Update). Unlike Go, where the new period applies at the
   * next Start(), a running loop is restarted at once with the new period (which relists now).
   */
  update(duration: RelistDuration): void {
    this.duration = { ...duration };
    if (this.controller) {
      this.controller.abort();
      this.controller = undefined;
      this.start();
    }
  }

  /**
   * Set by the evented PLEG while it is in use (Go: isEventedPLEGInUse): updateCache then stores
   * statuses at the runtime's own timestamp and a relist emits nothing for a pod whose cached
   * status was fresher (an event already reported it).
   */
  setEventedPLEGInUse(inUse: boolean): void {
    this.eventedInUse = inUse;
  }

  healthy(): PlegHealth {
    if (this.relistTime === undefined) return { healthy: false, error: new Error('pleg has yet to be successful') };
    const elapsed = this.clock.since(this.relistTime);
    if (elapsed > this.duration.relistThresholdMs) {
      return {
        healthy: false,
        error: new Error(`pleg was last seen active ${formatDuration(elapsed)} ago; threshold is ${formatDuration(this.duration.relistThresholdMs)}`),
      };
    }
    return { healthy: true };
  }

  /** When the last relist listed the pods successfully (Go: pleg_last_seen_seconds), undefined before. */
  lastRelistTime(): number | undefined {
    return this.relistTime;
  }

  /** Wall duration in ms of the last completed relist, undefined before the first. */
  lastRelistDurationMs(): number | undefined {
    return this.lastDuration;
  }

  /** The most recent relist durations in ms, oldest first (for a histogram). */
  relistDurations(): number[] {
    return [...this.durationSamples];
  }

  /** Relists completed (successful or not). */
  get relists(): number {
    return this.relistCount;
  }

  /** Pod UIDs whose inspection failed in the last relist and that the next relist inspects again. */
  podsPendingReinspection(): string[] {
    return [...this.podsToReinspect.keys()];
  }

  /**
   * Lists the runtime's pods, computes and emits events, refreshes the cache for changed pods.
   * Calls are serialized (Go: relistLock): a call made while one runs starts after it.
   */
  relist(): Promise<void> {
    const run = this.relistQueue.then(() => this.doRelist());
    this.relistQueue = run.catch(() => undefined);
    return run;
  }

  private async doRelist(): Promise<void> {
    const started = performance.now();
    try {
      await this.relistOnce();
    } finally {
      const durationMs = performance.now() - started;
      this.lastDuration = durationMs;
      this.relistCount++;
      this.durationSamples.push(durationMs);
      if (this.durationSamples.length > this.maxDurationSamples) this.durationSamples.shift();
      this.onRelistDuration?.(durationMs);
    }
  }

  private async relistOnce(): Promise<void> {
    const verbose = this.logger.v(5);
    if (verbose.enabled) verbose.info('GenericPLEG: Relisting');
    if (this.relistTime !== undefined) this.onRelistInterval?.(this.clock.since(this.relistTime));
    const timestamp = this.clock.now();

    let pods: RuntimePod[];
    try {
      pods = await this.runtime.getPods(true);
    } catch (err) {
      this.logger.error('GenericPLEG: Unable to retrieve pods', err);
      return;
    }
    this.relistTime = timestamp;
    this.onPodsListed?.(pods);

    // setCurrent
    for (const record of this.podRecords.values()) record.current = undefined;
    for (const pod of pods) {
      const record = this.podRecords.get(pod.id);
      if (record) record.current = pod;
      else this.podRecords.set(pod.id, { old: undefined, current: pod });
    }

    const needsReinspection = new Map<string, RuntimePod | undefined>();
    const changed: Array<{ pid: string; record: PodRecord; events: PodLifecycleEvent[] }> = [];
    for (const [pid, record] of this.podRecords) {
      const events = computeEventsFromStates(pid, record.old, record.current);
      if (events.length > 0 || this.podsToReinspect.has(pid)) changed.push({ pid, record, events });
    }
    await forEachLimit(changed, this.inspectionConcurrency, async ({ pid, record, events }) => {
      const pod = record.current;
      // Inspect the pod into the cache. On error the record keeps its old listing, so the same
      // events are computed (and the pod inspected) again on the next relist.
      const result = await this.updateCache(pod, pid);
      if (result.error) {
        const v4 = this.logger.v(4);
        if (v4.enabled) v4.info('PLEG: Ignoring events for pod', { pod: pod ? `${pod.namespace}/${pod.name}` : pid, err: result.error.message });
        needsReinspection.set(pid, pod);
        return;
      }
      if (this.eventedInUse && !result.updated) return;

      // update the record: the current listing becomes the old one
      if (record.current === undefined) this.podRecords.delete(pid);
      else {
        record.old = containerStateList(record.current);
        record.current = undefined;
      }

      let exitCodes: Map<string, number> | undefined;
      for (const event of events) {
        // ContainerChanged is not reliable and nobody uses it (as in Go).
        if (event.type === 'ContainerChanged') continue;
        if (!this.eventChannel.push(event)) {
          this.logger.error('Event channel is full, discard this relist() cycle event', undefined, { podUID: event.id, event: event.type });
        }
        if (event.type === 'ContainerDied' && pod && result.status) {
          const v2 = this.logger.v(2);
          if (v2.enabled) {
            exitCodes ??= new Map(result.status.containerStatuses.map((c) => [c.id.id, c.exitCode]));
            const exitCode = exitCodes.get(event.data ?? '');
            if (exitCode !== undefined) v2.info('Generic (PLEG): container finished', { podID: pod.id, containerID: event.data, exitCode });
          }
        }
      }
    });

    // Only after every changed pod is in the cache: all pods are now at least this fresh.
    this.cache.updateTime(timestamp);
    this.podsToReinspect = needsReinspection;
  }

  async updateCache(pod: RuntimePod | undefined, uid: string): Promise<UpdateCacheResult> {
    if (!pod) {
      // The pod has no visible containers or sandboxes any more.
      const v4 = this.logger.v(4);
      if (v4.enabled) v4.info('PLEG: Delete status for pod', { podUID: uid });
      this.cache.delete(uid);
      return { updated: true };
    }
    let timestamp = this.clock.now();
    let status: PodStatus | undefined;
    let error: Error | undefined;
    try {
      status = await this.runtime.getPodStatus(pod.id, pod.name, pod.namespace);
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
      this.logger.error('PLEG: Write status', error, { pod: `${pod.namespace}/${pod.name}` });
    }
    if (status) {
      const v4 = this.logger.v(4);
      if (v4.enabled) v4.info('PLEG: Write status', { pod: `${pod.namespace}/${pod.name}` });
      status = { ...status, ips: preservePodIPs(this.cache, uid, status) };
      // With evented PLEG the runtime's own timestamp orders statuses from both sources.
      if (this.eventedInUse && status.timestamp > 0) timestamp = status.timestamp;
    }
    const updated = this.cache.set(pod.id, status, error, timestamp);
    return error ? { status, updated, error } : { status, updated };
  }
}
