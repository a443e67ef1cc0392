import type { PodLifecycleEvent, PodStatus, RuntimePod } from '@kubelet-ts/core';

/** Go: plegChannelCapacity. */
export const PLEG_CHANNEL_CAPACITY = 1000;
/** Go: genericPlegRelistPeriod. */
export const GENERIC_PLEG_RELIST_PERIOD_MS = 1000;
/** Go: genericPlegRelistThreshold. */
export const GENERIC_PLEG_RELIST_THRESHOLD_MS = 3 * 60 * 1000;
/** Go: eventedPlegRelistPeriod, the generic PLEG's period while CRI events flow. */
export const EVENTED_PLEG_RELIST_PERIOD_MS = 300 * 1000;
/** Go: eventedPlegRelistThreshold. */
export const EVENTED_PLEG_RELIST_THRESHOLD_MS = 10 * 60 * 1000;
/** Go: eventedPlegMaxStreamRetries. */
export const EVENTED_PLEG_MAX_STREAM_RETRIES = 5;
/** Go: globalCacheUpdatePeriod in evented.go. */
export const GLOBAL_CACHE_UPDATE_PERIOD_MS = 2000;

/** What healthy() answers (Go: `(bool, error)`); error explains an unhealthy answer. */
export interface PlegHealth {
  healthy: boolean;
  error?: Error;
}

/** What updateCache() did: the status it stored (if inspected), whether the cache took it, and the inspection error. */
export interface UpdateCacheResult {
  status?: PodStatus;
  updated: boolean;
  error?: Error;
}

export interface WatchOptions {
  /** Ends the iteration quietly when aborted. */
  signal?: AbortSignal;
}

/**
 * The PLEG as the kubelet uses it (Go: pleg.PodLifecycleEventGenerator). Implemented by GenericPLEG,
 * EventedPLEG and, for tests, FakePLEG from `@kubelet-ts/pleg/testing`.
 */
export interface PodLifecycleEventGenerator {
  /** Starts the background loop(s); returns at once. Idempotent. */
  start(): void;
  /** Stops the loops; resolves once no relist is running and no timer is left. Idempotent. */
  stop(): Promise<void>;
  /** The lifecycle events; one consumer (the kubelet's syncLoop). */
  watch(options?: WatchOptions): AsyncIterable<PodLifecycleEvent>;
  /** Whether the PLEG is keeping up (relists recently enough / events not piling up). */
  healthy(): PlegHealth;
  /** One relist now (the evented PLEG delegates to its generic PLEG). */
  relist(): Promise<void>;
  /** Inspects one pod through the runtime and writes its status to the cache; undefined pod deletes it. */
  updateCache(pod: RuntimePod | undefined, uid: string): Promise<UpdateCacheResult>;
  /** Events refused because the watch channel was full. */
  readonly droppedEvents: number;
}
