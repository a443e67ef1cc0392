import {
  errorText,
  defaultLogger,
  realClock,
  until,
  type Clock,
  type ContainerRuntime,
  type Logger,
  type PodCache,
  type PodLifecycleEvent,
  type PodStatus,
  type RuntimePod,
} from '@kubelet-ts/core';
import type { RuntimeService, runtimeapi } from '@kubelet-ts/cri-client';
import { preservePodIPs, type GenericPLEG, type RelistDuration } from './generic.js';
import {
  EVENTED_PLEG_MAX_STREAM_RETRIES,
  EVENTED_PLEG_RELIST_PERIOD_MS,
  EVENTED_PLEG_RELIST_THRESHOLD_MS,
  GLOBAL_CACHE_UPDATE_PERIOD_MS,
  type PlegHealth,
  type PodLifecycleEventGenerator,
  type UpdateCacheResult,
  type WatchOptions,
} from './types.js';

export interface EventedPLEGOptions {
  /** Only getContainerEvents is used. */
  runtimeService: Pick<RuntimeService, 'getContainerEvents'>;
  /**
   * Turns each CRI container event into the pod status the cache stores (Go: EventedPLEG calls
   * runtime.GeneratePodStatus(event)), so events and relists map CRI statuses the same way
   * (container names from labels, hash/restart count from annotations, termination messages, the
   * runtime name in container ids). `GenericRuntimeManager` from @kubelet-ts/runtime-manager fits.
   * A rejected promise skips the event (logged); the next relist covers the pod.
   */
  runtime: EventedPLEGRuntime;
  cache: PodCache;
  /**
   * The generic PLEG to relist with; its channel is shared and its configured period/threshold are
   * what it falls back to when the event stream does not work (Go passes genericPlegRelistPeriod).
   */
  genericPleg: GenericPLEG;
  clock?: Clock;
  logger?: Logger;
  /** The generic PLEG's period while events flow. Default 300 s (Go eventedPlegRelistPeriod). */
  relistPeriodMs?: number;
  /** The generic PLEG's health threshold while events flow. Default 10 min (Go eventedPlegRelistThreshold). */
  relistThresholdMs?: number;
  /** Consecutive stream failures before falling back to normal relisting. Default 5 (Go eventedPlegMaxStreamRetries). */
  maxStreamRetries?: number;
  /** Wait between stream attempts before the fallback. Default 1 s (Go retries at once, with a forced relist in between). */
  streamRetryIntervalMs?: number;
  /**
   * After the fallback, try the stream again this often; once an event arrives, go back to evented
   * mode. Default 5 min. Infinity: never, Go's behaviour (the fallback is permanent).
   */
  retryPeriodMs?: number;
  /** How often the cache's global timestamp moves while events flow. Default 2 s (Go globalCacheUpdatePeriod). */
  globalCacheUpdatePeriodMs?: number;
}

/** What the evented PLEG needs of the runtime: `GenericRuntimeManager` from @kubelet-ts/runtime-manager fits. */
export type EventedPLEGRuntime = Pick<ContainerRuntime, 'type'> & {
  /** The pod status a CRI container event carries (Go: kubeGenericRuntimeManager.GeneratePodStatus). */
  generatePodStatus(event: runtimeapi.ContainerEventResponse): Promise<PodStatus>;
};

/** 'evented': events flow, the generic PLEG relists rarely. 'fallback': the generic PLEG relists at its normal period. */
export type EventedPLEGMode = 'stopped' | 'evented' | 'fallback';

/**
 * The evented PLEG (Go: pkg/kubelet/pleg/evented.go): consumes CRI GetContainerEvents, writes the
 * pod status each event carries to the cache (at the event's timestamp), and emits the matching
 * lifecycle event on the generic PLEG's channel. While events flow the generic PLEG keeps relisting
 * at a long period as a safety net and the cache's global timestamp moves every 2 s so pod workers
 * never wait on a quiet pod.
 *
 * When the stream fails (e.g. UnimplementedError from containerd 1.6, or the stream ends), each
 * failure forces a relist; after maxStreamRetries consecutive failures the generic PLEG goes back
 * to its normal period. Unlike Go, the stream is then retried every retryPeriodMs and evented mode
 * resumes with the first event received (pass Infinity for Go's permanent fallback).
 *
 * start() also starts the generic PLEG and stop() stops it: the kubelet drives only this object.
 */
export class EventedPLEG implements PodLifecycleEventGenerator {
  private readonly runtimeService: Pick<RuntimeService, 'getContainerEvents'>;
  private readonly runtime: EventedPLEGRuntime;
  private readonly cache: PodCache;
  private readonly generic: GenericPLEG;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly eventedDuration: RelistDuration;
  private readonly fallbackDuration: RelistDuration;
  private readonly maxStreamRetries: number;
  private readonly streamRetryIntervalMs: number;
  private readonly retryPeriodMs: number;
  private readonly globalCacheUpdatePeriodMs: number;
  private currentMode: EventedPLEGMode = 'stopped';
  private controller: AbortController | undefined;
  private task: Promise<void> | undefined;
  private cacheUpdater: { controller: AbortController; loop: Promise<void> } | undefined;
  private counters = { streamConnections: 0, streamErrors: 0, fallbacks: 0, eventsReceived: 0, eventsSkipped: 0 };
  private lastLatencyMs: number | undefined;

  constructor(opts: EventedPLEGOptions) {
    this.runtimeService = opts.runtimeService;
    this.runtime = opts.runtime;
    this.cache = opts.cache;
    this.generic = opts.genericPleg;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.eventedDuration = {
      relistPeriodMs: opts.relistPeriodMs ?? EVENTED_PLEG_RELIST_PERIOD_MS,
      relistThresholdMs: opts.relistThresholdMs ?? EVENTED_PLEG_RELIST_THRESHOLD_MS,
    };
    this.fallbackDuration = this.generic.relistDuration;
    this.maxStreamRetries = opts.maxStreamRetries ?? EVENTED_PLEG_MAX_STREAM_RETRIES;
    this.streamRetryIntervalMs = opts.streamRetryIntervalMs ?? 1000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 5 * 60 * 1000;
    this.globalCacheUpdatePeriodMs = opts.globalCacheUpdatePeriodMs ?? GLOBAL_CACHE_UPDATE_PERIOD_MS;
  }

  get mode(): EventedPLEGMode {
    return this.currentMode;
  }

  /**
   * Counters for metrics (Go: evented_pleg_connection_success_count, ..._error_count). eventsSkipped:
   * CRI events that updated nothing because they had no sandbox metadata or their pod status could
   * not be generated (each logged as an error; the next relist covers the pod).
   */
  get stats(): { streamConnections: number; streamErrors: number; fallbacks: number; eventsReceived: number; eventsSkipped: number } {
    return { ...this.counters };
  }

  /** Time from the runtime creating the last event to its processing (Go: evented_pleg_connection_latency_seconds). */
  lastEventLatencyMs(): number | undefined {
    return this.lastLatencyMs;
  }

  get droppedEvents(): number {
    return this.generic.droppedEvents;
  }

  watch(options: WatchOptions = {}): AsyncIterable<PodLifecycleEvent> {
    return this.generic.watch(options);
  }

  relist(): Promise<void> {
    return this.generic.relist();
  }

  updateCache(pod: RuntimePod | undefined, uid: string): Promise<UpdateCacheResult> {
    return this.generic.updateCache(pod, uid);
  }

  /**
   * Inspects one pod now, for a pod worker whose pod's cached status predates its previous sync. The event
   * for a sync's own last change (its container started) is created while that sync still runs, so it is
   * never newer than the sync's end; with no relist to follow, the worker would otherwise wait for the
   * periodic global cache timestamp. Resolves false, inspecting nothing, while relisting in fallback mode.
   */
  async refreshPodStatus(pod: { uid: string; name: string; namespace: string }): Promise<boolean> {
    if (this.currentMode !== 'evented') return false;
    await this.generic.updateCache({ id: pod.uid, name: pod.name, namespace: pod.namespace, createdAt: 0, containers: [], sandboxes: [] }, pod.uid);
    return true;
  }

  start(): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    this.enterEventedMode();
    this.generic.start();
    this.task = this.watchEvents(controller.signal);
  }

  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    this.controller = undefined;
    controller.abort();
    await this.task;
    await this.stopCacheUpdater();
    this.currentMode = 'stopped';
    this.generic.setEventedPLEGInUse(false);
    await this.generic.stop();
    this.generic.update(this.fallbackDuration);
  }

  /**
   * Unhealthy when the event channel is full (Go EventedPLEG.Healthy), otherwise as healthy as the
   * generic PLEG (whose threshold is the long one while events flow). Go registers both checks
   * separately; here one call answers both.
   */
  healthy(): PlegHealth {
    const channel = this.generic.eventChannel;
    if (channel.length === channel.capacity) {
      return { healthy: false, error: new Error(`EventedPLEG: pleg event channel capacity is full with ${channel.length} events`) };
    }
    return this.generic.healthy();
  }

  private enterEventedMode(): void {
    this.currentMode = 'evented';
    this.generic.setEventedPLEGInUse(true);
    this.generic.update(this.eventedDuration);
    this.startCacheUpdater();
  }

  private async enterFallbackMode(): Promise<void> {
    this.currentMode = 'fallback';
    this.counters.fallbacks++;
    this.logger.info('Fall back to Generic PLEG relisting since Evented PLEG is not working', {
      relistPeriod: this.fallbackDuration.relistPeriodMs,
      retryPeriod: this.retryPeriodMs,
    });
    await this.stopCacheUpdater();
    this.generic.setEventedPLEGInUse(false);
    this.generic.update(this.fallbackDuration);
  }

  private startCacheUpdater(): void {
    if (this.cacheUpdater) return;
    const controller = new AbortController();
    const loop = until(() => this.cache.updateTime(this.clock.now()), this.globalCacheUpdatePeriodMs, controller.signal, this.clock, {
      logger: this.logger,
      name: 'evented-pleg-cache-update',
    });
    this.cacheUpdater = { controller, loop };
  }

  private async stopCacheUpdater(): Promise<void> {
    const updater = this.cacheUpdater;
    this.cacheUpdater = undefined;
    updater?.controller.abort();
    await updater?.loop;
  }

  private async watchEvents(signal: AbortSignal): Promise<void> {
    let attempts = 0;
    while (!signal.aborted) {
      let failure: unknown;
      this.counters.streamConnections++;
      try {
        for await (const event of this.runtimeService.getContainerEvents({ signal })) {
          if (signal.aborted) return;
          if (this.currentMode === 'fallback') {
            this.logger.info('Evented PLEG: container events flow again, relisting at the long period');
            this.enterEventedMode();
          }
          attempts = 0;
          // One at a time, in arrival order: a later event must not overtake an earlier one.
          await this.processEvent(event);
        }
        if (signal.aborted) return;
        failure = new Error('the container event stream ended');
      } catch (err) {
        if (signal.aborted) return;
        failure = err;
      }
      this.counters.streamErrors++;

      if (this.currentMode === 'evented') {
        attempts++;
        this.logger.warn('Evented PLEG: Failed to get container events, retrying', { err: errorText(failure), attempt: attempts });
        // Force a relist so nothing is missed while the stream is down (as Go does).
        try {
          await this.generic.relist();
        } catch (err) {
          this.logger.error('Evented PLEG: forced relist failed', err);
        }
        if (signal.aborted) return;
        if (attempts >= this.maxStreamRetries) {
          await this.enterFallbackMode();
          attempts = 0;
        }
      } else {
        const v = this.logger.v(4);
        if (v.enabled) v.info('Evented PLEG: container events still unavailable', { err: errorText(failure) });
      }

      const delay = this.currentMode === 'fallback' ? this.retryPeriodMs : this.streamRetryIntervalMs;
      if (!Number.isFinite(delay)) return; // permanent fallback, as Go
      try {
        await this.clock.sleep(delay, signal);
      } catch {
        return;
      }
    }
  }

  /** Go processCRIEvents + processCRIEvent for one event. */
  private async processEvent(event: runtimeapi.ContainerEventResponse): Promise<void> {
    this.counters.eventsReceived++;
    // Checked before the runtime is asked, as Go does: without the sandbox's metadata there is no pod to update.
    const uid = event.podSandboxStatus?.metadata?.uid;
    if (uid === undefined) {
      // The sandbox is gone already; its own deletion event or a relist covers the pod.
      this.counters.eventsSkipped++;
      this.logger.error('Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus or PodSandboxStatus.Metadata', undefined, {
        containerId: event.containerId,
        type: event.containerEventType,
      });
      return;
    }
    let status: PodStatus;
    try {
      status = await this.runtime.generatePodStatus(event);
    } catch (err) {
      // Go caches the error with the status; here the event is skipped and a relist covers the pod.
      this.counters.eventsSkipped++;
      this.logger.error('Evented PLEG: error generating pod status from the received event', err, {
        podUID: uid,
        containerId: event.containerId,
        type: event.containerEventType,
      });
      return;
    }
    status.ips = preservePodIPs(this.cache, uid, status);
    const timestamp = status.timestamp;
    this.lastLatencyMs = this.clock.now() - timestamp;
    const v = this.logger.v(4);
    if (v.enabled) v.info('Evented PLEG: Generated pod status from the received event', { podUID: uid, type: event.containerEventType });

    let send: boolean;
    if (event.containerEventType === 'CONTAINER_DELETED_EVENT') {
      if (status.sandboxStatuses.some((s) => s.id === event.containerId)) {
        // The runtime removed the sandbox: the pod's cached status goes with it.
        this.cache.delete(uid);
      } else {
        // Go leaves the cache alone here; storing the event's status drops the removed container from it.
        this.cache.set(uid, status, undefined, timestamp);
      }
      send = true;
    } else {
      send = this.cache.set(uid, status, undefined, timestamp);
    }
    if (!send) return;

    const cid = event.containerId;
    switch (event.containerEventType) {
      case 'CONTAINER_STOPPED_EVENT':
        this.send({ id: uid, type: 'ContainerDied', data: cid });
        break;
      case 'CONTAINER_CREATED_EVENT':
        // Only the cache changes; the generic PLEG ignores created containers too.
        break;
      case 'CONTAINER_STARTED_EVENT':
        this.send({ id: uid, type: 'ContainerStarted', data: cid });
        break;
      case 'CONTAINER_DELETED_EVENT':
        this.send({ id: uid, type: 'ContainerDied', data: cid });
        this.send({ id: uid, type: 'ContainerRemoved', data: cid });
        break;
    }
  }

  private send(event: PodLifecycleEvent): void {
    if (!this.generic.eventChannel.push(event)) {
      this.logger.error('Evented PLEG: Event channel is full, discarded pod lifecycle event', undefined, { podUID: event.id, event: event.type });
    }
  }
}
