import type { V1Pod } from '@kubernetes/client-node';
import {
  abortReason,
  buildPodFullName,
  isAbortError,
  isStaticPod,
  jitter,
  defaultLogger,
  realClock,
  TimedWorkQueue,
  type Clock,
  type Logger,
  type PodCache,
  type PodCacheResult,
  type PodStatus,
  type RuntimePod,
} from '@kubelet-ts/core';
import type {
  KillPodOptions,
  PodStatusFunc,
  PodSyncer,
  PodWorkerState,
  PodWorkerSync,
  PodWorkers as PodWorkersInterface,
  UpdatePodOptions,
} from './types.js';

/** Go workerResyncIntervalJitterFactor. */
export const WORKER_RESYNC_INTERVAL_JITTER_FACTOR = 0.5;
/** Go workerBackOffPeriodJitterFactor. */
export const WORKER_BACKOFF_PERIOD_JITTER_FACTOR = 0.5;
/** Go backOffOnTransientErrorPeriod: the retry delay when the network is not ready yet. */
export const BACKOFF_ON_TRANSIENT_ERROR_PERIOD_MS = 1000;
/** Go backOffPeriod. */
export const DEFAULT_BACKOFF_PERIOD_MS = 10_000;
/** Go syncFrequency default (KubeletConfiguration.syncFrequency). */
export const DEFAULT_RESYNC_INTERVAL_MS = 60_000;
/** Go NetworkNotReadyErrorMsg: a sync failing with this retries after 1 s instead of the backoff. */
export const NETWORK_NOT_READY_ERROR_MSG = 'network is not ready';

/** Per-pod state of the worker (Go: podSyncStatus). Times are ms; undefined means "not yet". */
interface PodSyncStatus {
  controller: AbortController | undefined;
  fullname: string;
  working: boolean;
  pendingUpdate: UpdatePodOptions | undefined;
  activeUpdate: UpdatePodOptions | undefined;
  syncedAt: number;
  startedAt: number | undefined;
  terminatingAt: number | undefined;
  terminatedAt: number | undefined;
  /** The effective grace period once terminating; 0 until then. */
  gracePeriod: number;
  notifyPostTerminating: (() => void)[];
  statusPostTerminating: PodStatusFunc[];
  startedTerminating: boolean;
  deleted: boolean;
  evicted: boolean;
  finished: boolean;
  restartRequested: boolean;
  observedRuntime: boolean;
  /** When the worker last synced (Go: podWorkerLoop's lastSyncTime); 0 before the first sync. */
  lastSyncTime: number;
}

const isTerminationRequested = (s: PodSyncStatus): boolean => s.terminatingAt !== undefined;
const isTerminated = (s: PodSyncStatus): boolean => s.terminatedAt !== undefined;
const isStarted = (s: PodSyncStatus): boolean => s.startedAt !== undefined;

function workType(s: PodSyncStatus): PodWorkerState {
  if (isTerminated(s)) return 'terminated';
  if (isTerminationRequested(s)) return 'terminating';
  return 'sync';
}

/**
 * Go mergeLastUpdate: the pod and mirror pod are the latest seen (a runtime pod never replaces a
 * known spec), kill options accumulate (evict sticks, the grace period is the effective one).
 */
function mergeLastUpdate(status: PodSyncStatus, other: UpdatePodOptions): void {
  // As in Go the update type is not merged: a replayed update is a plain 'sync'.
  const opts: UpdatePodOptions = status.activeUpdate ?? { updateType: 'sync' };
  status.activeUpdate = opts;
  if (opts.pod === undefined || other.runningPod === undefined) opts.pod = other.pod;
  opts.runningPod = other.runningPod;
  if (other.mirrorPod) opts.mirrorPod = other.mirrorPod;
  if (other.killPodOptions) {
    const merged: KillPodOptions = {};
    if (other.killPodOptions.evict) merged.evict = true;
    if (other.killPodOptions.gracePeriodOverrideSeconds !== undefined) {
      merged.gracePeriodOverrideSeconds = other.killPodOptions.gracePeriodOverrideSeconds;
    }
    opts.killPodOptions = merged;
  }
}

/** A placeholder API pod for a runtime-only pod (Go: kubecontainer.Pod.ToAPIPod). */
function runtimePodToAPIPod(pod: RuntimePod): V1Pod {
  return { metadata: { uid: pod.id, name: pod.name, namespace: pod.namespace } };
}

const podRef = (pod: V1Pod | undefined): string => `${pod?.metadata?.namespace ?? ''}/${pod?.metadata?.name ?? ''}`;

/**
 * Go calculateEffectiveGracePeriod: the first value is the API's deletionGracePeriodSeconds, or a
 * kill's override, or the pod's terminationGracePeriodSeconds; afterwards it can only shrink. The
 * result is never below 1 s. Returns the grace period and whether it shrank.
 */
export function calculateEffectiveGracePeriod(
  currentGracePeriod: number,
  pod: V1Pod,
  options: KillPodOptions | undefined,
): { gracePeriod: number; shortened: boolean } {
  let gracePeriod = currentGracePeriod;
  let overridden = false;
  const deletionGrace = pod.metadata?.deletionGracePeriodSeconds;
  if (deletionGrace !== undefined && deletionGrace !== null && (gracePeriod === 0 || deletionGrace < gracePeriod)) {
    gracePeriod = deletionGrace;
    overridden = true;
  }
  const override = options?.gracePeriodOverrideSeconds;
  if (override !== undefined && override !== null && (gracePeriod === 0 || override < gracePeriod)) {
    gracePeriod = override;
    overridden = true;
  }
  const specGrace = pod.spec?.terminationGracePeriodSeconds;
  if (!overridden && gracePeriod === 0 && specGrace !== undefined && specGrace !== null) gracePeriod = specGrace;
  if (gracePeriod < 1) gracePeriod = 1;
  return { gracePeriod, shortened: currentGracePeriod !== 0 && currentGracePeriod !== gracePeriod };
}

/** Go isPodStatusCacheTerminal: nothing running and no sandbox ready. */
function isPodStatusCacheTerminal(status: PodStatus): boolean {
  return !status.containerStatuses.some((c) => c.state === 'running') && !status.sandboxStatuses.some((s) => s.state === 'SANDBOX_READY');
}

export interface PodWorkersOptions {
  syncer: PodSyncer;
  cache: PodCache;
  clock?: Clock;
  logger?: Logger;
  /** After a successful sync the pod is due again after this, jittered by up to +50%. Default 60 s (syncFrequency). */
  resyncIntervalMs?: number;
  /** After a failed sync the pod is due again after this, jittered by up to +50%. Default 10 s (Go backOffPeriod). */
  backOffPeriodMs?: number;
  /** Where pods become due for their next sync; the kubelet's sync loop drains it with getWork(). */
  workQueue?: TimedWorkQueue<string>;
  /** Randomness for the jitter; tests pass () => 0 for exact delays. */
  random?: () => number;
  /**
   * Called once the worker has processed an update that carries a startTime, with the time in ms from that
   * startTime to the end of the sync, successful or not (Go: kubelet_pod_worker_duration_seconds). The operation
   * type is the update's updateType ('create', 'update', 'sync', 'kill'), or 'terminated' for the final
   * syncTerminatedPod, as Go labels it.
   */
  onSyncDuration?: (operationType: string, durationMs: number) => void;
  /**
   * Inspects the pod's status in the runtime now and stores it in the cache; resolves false when it did not
   * (a relist will). Given with a PLEG that does not relist after every change (the evented PLEG: EventedPLEG.
   * refreshPodStatus): a worker whose pod's cached status predates its previous sync asks for it instead of
   * waiting for the cache's periodic global timestamp.
   */
  refreshPodStatus?: (pod: { uid: string; name: string; namespace: string }) => Promise<boolean>;
}

/**
 * The pod workers (Go: pkg/kubelet/pod_workers.go): one serialized worker per pod UID driving the pod
 * through sync (syncPod while it should run), terminating (syncTerminatingPod until it succeeds,
 * with a grace period that can only shrink), terminated (syncTerminatedPod) and finished; a finished
 * pod is forgotten by syncKnownPods once it is no longer desired. Updates that arrive while a sync
 * runs are coalesced: the worker runs next with the latest one. Every sync first waits for the
 * PodCache to be newer than the worker's previous sync, so it never acts on a status it already
 * acted on. Successful syncs enqueue the pod in the work queue for the next resync, failed ones
 * after a backoff; the kubelet's sync loop turns due pods into updatePod({ updateType: 'sync' }).
 *
 * A worker is an async loop that runs while its pod has a pending update and exits when idle (Go
 * keeps one goroutine per pod blocked on a channel); the observable behaviour is the same.
 */
export class PodWorkers implements PodWorkersInterface {
  readonly workQueue: TimedWorkQueue<string>;
  private readonly syncer: PodSyncer;
  private readonly cache: PodCache;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly resyncIntervalMs: number;
  private readonly backOffPeriodMs: number;
  private readonly random: () => number;
  private readonly onSyncDuration?: (operationType: string, durationMs: number) => void;
  private readonly refreshPodStatus?: (pod: { uid: string; name: string; namespace: string }) => Promise<boolean>;
  private readonly statuses = new Map<string, PodSyncStatus>();
  private readonly loops = new Map<string, Promise<void>>();
  private readonly startedStaticPodsByFullname = new Map<string, string>();
  private readonly waitingToStartStaticPodsByFullname = new Map<string, string[]>();
  private podsSynced = false;
  private stopped = false;

  constructor(opts: PodWorkersOptions) {
    this.syncer = opts.syncer;
    this.cache = opts.cache;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.resyncIntervalMs = opts.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS;
    this.backOffPeriodMs = opts.backOffPeriodMs ?? DEFAULT_BACKOFF_PERIOD_MS;
    this.workQueue = opts.workQueue ?? new TimedWorkQueue<string>({ clock: this.clock });
    this.random = opts.random ?? Math.random;
    this.onSyncDuration = opts.onSyncDuration;
    this.refreshPodStatus = opts.refreshPodStatus;
  }

  // ---- queries (Go: PodWorkers interface) ----

  /** True once syncTerminatingPod succeeded for the pod; false for unknown pods. */
  isPodKnownTerminated(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? isTerminated(status) : false;
  }

  /** True before the first syncKnownPods, and for known pods until their containers are known stopped. */
  couldHaveRunningContainers(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? !isTerminated(status) : !this.podsSynced;
  }

  /** True once syncTerminatedPod succeeded; for unknown pods, once syncKnownPods ran. */
  shouldPodBeFinished(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? status.finished : this.podsSynced;
  }

  /** True from the moment termination is requested until the pod is forgotten; false for unknown pods. */
  isPodTerminationRequested(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? isTerminationRequested(status) : false;
  }

  /** True once the worker has seen the termination (no container will start again); for unknown pods, once synced. */
  shouldPodContainersBeTerminating(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? status.startedTerminating : this.podsSynced;
  }

  /** True once the pod's containers are stopped; for unknown pods, once synced. */
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? isTerminated(status) : this.podsSynced;
  }

  /** True for an evicted pod, or a deleted one whose containers are stopped; for unknown pods, once synced. */
  shouldPodContentBeRemoved(uid: string): boolean {
    const status = this.statuses.get(uid);
    return status ? status.evicted || (status.deleted && isTerminated(status)) : this.podsSynced;
  }

  /** True while the started static pod with this full name is terminating (orphaned mirror pods wait for it). */
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean {
    const uid = this.startedStaticPodsByFullname.get(podFullName);
    if (uid === undefined) return false;
    const status = this.statuses.get(uid);
    if (!status) return false;
    return isTerminationRequested(status) && !isTerminated(status);
  }

  /** The state of a known pod's worker, undefined when unknown (for the kubelet's debug handlers and tests). */
  podWorkerState(uid: string): PodWorkerState | undefined {
    const status = this.statuses.get(uid);
    return status ? workType(status) : undefined;
  }

  /** True while an update for the pod is pending or being worked on. */
  isWorking(uid: string): boolean {
    return this.statuses.get(uid)?.working ?? false;
  }

  /** The latest update the worker acted on (Go: activeUpdate), the source of truth for what a pod should be. */
  activeUpdate(uid: string): UpdatePodOptions | undefined {
    const update = this.statuses.get(uid)?.activeUpdate;
    return update ? { ...update } : undefined;
  }

  /** UIDs of every pod with a worker state. */
  knownPods(): string[] {
    return [...this.statuses.keys()];
  }

  // ---- updates ----

  /**
   * Hands a change to the pod's worker (Go: UpdatePod). A pod moves to terminating when deleted in
   * the API, in a terminal phase, killed (updateType 'kill'), or known only from the runtime; once
   * terminating every update only (possibly) shortens the grace period, and a finished pod ignores
   * updates until syncKnownPods forgets it.
   */
  updatePod(input: UpdatePodOptions): void {
    if (this.stopped) return;
    const options: UpdatePodOptions = { ...input, killPodOptions: input.killPodOptions ? { ...input.killPodOptions } : undefined };
    let isRuntimePod = false;
    let uid: string;
    let name: string;
    let namespace: string;
    if (options.runningPod) {
      if (!options.pod) {
        if (options.updateType !== 'kill') {
          this.logger.info('Pod update is ignored, runtime pods can only be killed', {
            pod: `${options.runningPod.namespace}/${options.runningPod.name}`,
            podUID: options.runningPod.id,
            updateType: options.updateType,
          });
          return;
        }
        ({ id: uid, name, namespace } = options.runningPod);
        isRuntimePod = true;
      } else {
        options.runningPod = undefined;
        ({ uid, name, namespace } = podIdentity(options.pod));
        this.logger.info('Pod update included RunningPod which is only valid when Pod is not specified', { pod: `${namespace}/${name}`, podUID: uid });
      }
    } else if (options.pod) {
      ({ uid, name, namespace } = podIdentity(options.pod));
    } else {
      this.logger.error('Pod update has neither a pod nor a running pod; ignored', undefined, { updateType: options.updateType });
      return;
    }

    const now = this.clock.now();
    let firstTime = false;
    let status = this.statuses.get(uid);
    if (!status) {
      firstTime = true;
      status = newSyncStatus(now, buildPodFullName(name, namespace));
      // A terminal pod seen for the first time (kubelet restart) whose runtime state is terminal too
      // already went through termination: only syncTerminatedPod is left (Go: issue 105523).
      const phase = options.pod?.status?.phase;
      if (options.pod && (phase === 'Failed' || phase === 'Succeeded')) {
        const cached = this.cache.get(uid);
        if (!cached.error && isPodStatusCacheTerminal(cached.status)) {
          status.terminatedAt = now;
          status.terminatingAt = now;
          status.startedTerminating = true;
        }
      }
      this.statuses.set(uid, status);
    }

    let pod = options.pod;
    if (isRuntimePod) {
      status.observedRuntime = true;
      if (status.pendingUpdate?.pod) {
        pod = status.pendingUpdate.pod;
        options.pod = pod;
        options.runningPod = undefined;
      } else if (status.activeUpdate?.pod) {
        pod = status.activeUpdate.pod;
        options.pod = pod;
        options.runningPod = undefined;
      } else {
        // The placeholder stands in for the spec here only; options.pod stays undefined.
        pod = runtimePodToAPIPod(options.runningPod as RuntimePod);
      }
    }
    const apiPod = pod as V1Pod;

    // A create for a terminating UID: the source reused the UID (static pods with a fixed UID). Let
    // the old one finish; syncKnownPods then forgets it so the new one can start.
    if (!firstTime && isTerminationRequested(status) && options.updateType === 'create') {
      status.restartRequested = true;
      this.logger.v(4).info('Pod is terminating but has been requested to restart with same UID, will be reconciled later', { podUID: uid });
      return;
    }

    if (status.finished) {
      this.logger.v(4).info('Pod is finished processing, no further updates', { podUID: uid, updateType: options.updateType });
      return;
    }

    let becameTerminating = false;
    if (!isTerminationRequested(status)) {
      if (isRuntimePod) {
        status.deleted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (apiPod.metadata?.deletionTimestamp) {
        status.deleted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (apiPod.status?.phase === 'Failed' || apiPod.status?.phase === 'Succeeded') {
        status.terminatingAt = now;
        becameTerminating = true;
      } else if (options.updateType === 'kill') {
        if (options.killPodOptions?.evict) status.evicted = true;
        status.terminatingAt = now;
        becameTerminating = true;
      }
      if (becameTerminating) this.logger.v(4).info('Pod is terminating', { pod: `${namespace}/${name}`, podUID: uid });
    }

    let gracePeriodShortened = false;
    if (isTerminated(status)) {
      // A runtime-only kill from a stale housekeeping view waits until the worker is done.
      if (isRuntimePod) return;
      this.notify(options.killPodOptions?.completed);
      options.killPodOptions = undefined;
    } else if (isTerminationRequested(status)) {
      const kill = options.killPodOptions ?? {};
      options.killPodOptions = kill;
      if (kill.completed) status.notifyPostTerminating.push(kill.completed);
      if (kill.podStatusFn) status.statusPostTerminating.push(kill.podStatusFn);
      const effective = calculateEffectiveGracePeriod(status.gracePeriod, apiPod, kill);
      gracePeriodShortened = effective.shortened;
      status.gracePeriod = effective.gracePeriod;
      // Always handed down, so syncTerminatingPod never recomputes it.
      kill.gracePeriodOverrideSeconds = effective.gracePeriod;
    } else if (options.killPodOptions) {
      // Kill options mean nothing outside termination.
      this.notify(options.killPodOptions.completed);
      options.killPodOptions = undefined;
    }

    if (firstTime && isStaticPod(apiPod)) {
      // Static pods with one full name start in the order their first updates arrive (Go appends
      // when it creates the worker, which is exactly when the pod's state is new).
      const waiting = this.waitingToStartStaticPodsByFullname.get(status.fullname) ?? [];
      waiting.push(uid);
      this.waitingToStartStaticPodsByFullname.set(status.fullname, waiting);
    }

    // Keep the oldest start time for latency metrics.
    const pendingStart = status.pendingUpdate?.startTime;
    if (pendingStart !== undefined && (options.startTime === undefined || pendingStart < options.startTime)) options.startTime = pendingStart;

    status.pendingUpdate = options;
    status.working = true;
    this.logger.v(4).info('Notifying pod of pending update', { podUID: uid, workType: workType(status) });
    this.kick(uid);

    if ((becameTerminating || gracePeriodShortened) && status.controller) {
      this.logger.v(3).info('Cancelling current pod sync', { podUID: uid, workType: workType(status) });
      status.controller.abort();
    }
  }

  /**
   * Forgets finished pods that are no longer desired (or whose UID was reused), starts terminating
   * orphaned pods that still run, and reports every remaining worker (Go: SyncKnownPods). After
   * the first call, unknown pods count as not running for the query methods.
   */
  syncKnownPods(desiredPods: V1Pod[]): Map<string, PodWorkerSync> {
    const known = new Set(desiredPods.map((pod) => pod.metadata?.uid ?? ''));
    const workers = new Map<string, PodWorkerSync>();
    this.podsSynced = true;
    for (const [uid, status] of [...this.statuses]) {
      const orphan = !known.has(uid);
      if ((status.restartRequested || orphan) && this.removeTerminatedWorker(uid, status, orphan)) continue;
      const sync: PodWorkerSync = { state: workType(status), orphan, hasConfig: false, static: false };
      const update = status.activeUpdate ?? status.pendingUpdate;
      if (update?.pod) {
        sync.hasConfig = true;
        sync.static = isStaticPod(update.pod);
      }
      workers.set(uid, sync);
    }
    return workers;
  }

  /** Stops every worker: aborts running syncs and resolves once they returned. Later updates are ignored. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const status of this.statuses.values()) status.controller?.abort();
    while (this.loops.size > 0) await Promise.all([...this.loops.values()]);
  }

  // ---- the worker ----

  private kick(uid: string): void {
    if (this.stopped || this.loops.has(uid)) return;
    this.loops.set(uid, this.podWorkerLoop(uid));
  }

  /**
   * The worker of one pod: runs while the pod has a pending update. It leaves the loops map in the
   * same synchronous step as its last look at pendingUpdate, so an update arriving later always
   * finds no loop and starts one.
   */
  private async podWorkerLoop(uid: string): Promise<void> {
    try {
      // Start asynchronously, so updatePod() returns before any sync work happens (as a goroutine would).
      await Promise.resolve();
      await this.workPod(uid);
    } catch (err) {
      this.logger.error('Pod worker crashed', err, { podUID: uid });
      const status = this.statuses.get(uid);
      if (status) status.working = false;
    } finally {
      this.loops.delete(uid);
    }
  }

  private async workPod(uid: string): Promise<void> {
    while (!this.stopped) {
      const started = this.startPodSync(uid);
      if (!started) return;
      const { update, status, signal } = started;
      if (!started.canEverStart || !started.canStart) return;

      const opts = update.options;
      const ref = opts.runningPod ? `${opts.runningPod.namespace}/${opts.runningPod.name}` : podRef(opts.pod);
      this.logger.v(4).info('Processing pod event', { pod: ref, podUID: uid, updateType: update.workType });
      let isTerminal = false;
      let error: unknown;
      try {
        let podStatus: PodStatus | undefined;
        if (!opts.runningPod) {
          const cached = await this.statusSince(opts.pod as V1Pod, status.lastSyncTime, signal);
          if (cached.error) throw cached.error;
          podStatus = cached.status;
        }
        try {
          if (update.workType === 'terminated') {
            await this.syncer.syncTerminatedPod(opts.pod as V1Pod, podStatus as PodStatus, signal);
          } else if (update.workType === 'terminating') {
            const gracePeriod = opts.killPodOptions?.gracePeriodOverrideSeconds;
            const podStatusFn = this.acknowledgeTerminating(uid);
            if (opts.runningPod) await this.syncer.syncTerminatingRuntimePod(opts.runningPod, signal);
            else await this.syncer.syncTerminatingPod(opts.pod as V1Pod, podStatus as PodStatus, gracePeriod, podStatusFn, signal);
          } else {
            isTerminal = await this.syncer.syncPod(opts.updateType, opts.pod as V1Pod, opts.mirrorPod, podStatus as PodStatus, signal);
          }
        } finally {
          status.lastSyncTime = this.clock.now();
        }
      } catch (err) {
        error = err;
      }

      let phaseTransition = false;
      if (error !== undefined) {
        if (signal.aborted && isAbortError(error)) {
          // A newer update (termination or a shorter grace period) is already pending.
          this.logger.v(2).info('Sync exited with context cancellation error', { pod: ref, podUID: uid, updateType: update.workType });
        } else {
          this.logger.error('Error syncing pod, skipping', error, { pod: ref, podUID: uid });
        }
      } else if (update.workType === 'terminated') {
        this.completeTerminated(uid);
        this.observeSyncDuration('terminated', opts.startTime);
        return;
      } else if (update.workType === 'terminating') {
        if (opts.runningPod) {
          this.completeTerminatingRuntimePod(uid);
          this.observeSyncDuration(opts.updateType, opts.startTime);
          return;
        }
        this.completeTerminating(uid);
        phaseTransition = true;
      } else if (isTerminal) {
        this.logger.v(4).info('Pod is terminal', { pod: ref, podUID: uid });
        this.completeSync(uid);
        phaseTransition = true;
      }

      const more = this.completeWork(uid, phaseTransition, error);
      this.observeSyncDuration(opts.updateType, opts.startTime);
      if (!more) return;
    }
  }

  /** The pod's cached status once it is newer than the worker's previous sync. */
  private async statusSince(pod: V1Pod, lastSyncTime: number, signal: AbortSignal): Promise<PodCacheResult> {
    const uid = pod.metadata?.uid ?? '';
    if (this.refreshPodStatus && !this.cache.isNewerThan(uid, lastSyncTime)) {
      // The inspection starts after lastSyncTime: whatever the cache holds once it is done is fresh enough.
      if (await this.refreshPodStatus({ uid, name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '' })) {
        if (signal.aborted) throw abortReason(signal);
        return this.cache.get(uid);
      }
    }
    // Wait for the PLEG to have refreshed the pod since our last sync.
    return this.cache.getNewerThan(uid, lastSyncTime, signal);
  }

  private observeSyncDuration(operationType: string, startTime: number | undefined): void {
    if (this.onSyncDuration && startTime !== undefined) this.onSyncDuration(operationType, this.clock.now() - startTime);
  }

  /**
   * Go startPodSync: takes the pending update and decides whether the pod may start. Returns
   * undefined when there is nothing to do.
   */
  private startPodSync(uid: string):
    | { update: { workType: PodWorkerState; options: UpdatePodOptions }; status: PodSyncStatus; signal: AbortSignal; canStart: boolean; canEverStart: boolean }
    | undefined {
    const status = this.statuses.get(uid);
    if (!status) return undefined;
    const pending = status.pendingUpdate;
    if (!pending) {
      status.working = false;
      return undefined;
    }
    const update = { workType: workType(status), options: pending };
    status.pendingUpdate = undefined;
    if (!status.controller || status.controller.signal.aborted) status.controller = new AbortController();
    const signal = status.controller.signal;
    const result = (canStart: boolean, canEverStart: boolean) => ({ update, status, signal, canStart, canEverStart });

    if (isStarted(status)) {
      mergeLastUpdate(status, pending);
      return result(true, true);
    }
    // A runtime-only pod "starts" straight into terminating.
    if (pending.runningPod && update.workType === 'terminating') {
      mergeLastUpdate(status, pending);
      return result(true, true);
    }
    if (!pending.pod) {
      mergeLastUpdate(status, pending);
      this.logger.v(4).info('Running pod cannot start ever, programmer error', { podUID: uid });
      return result(false, false);
    }
    const { canStart, canEverStart } = this.allowPodStart(pending.pod, status, uid);
    if (!canEverStart) {
      this.cleanupUnstartedPod(uid, status);
      this.logger.v(4).info('Pod cannot start ever', { pod: podRef(pending.pod), podUID: uid });
      return result(canStart, canEverStart);
    }
    if (!canStart) {
      // The only path where the update goes back to pending.
      status.pendingUpdate = pending;
      status.working = false;
      this.logger.v(4).info('Pod cannot start yet', { pod: podRef(pending.pod), podUID: uid });
      return result(canStart, canEverStart);
    }
    status.startedAt = this.clock.now();
    mergeLastUpdate(status, pending);
    return result(true, true);
  }

  private allowPodStart(pod: V1Pod, status: PodSyncStatus, uid: string): { canStart: boolean; canEverStart: boolean } {
    if (!isStaticPod(pod)) return { canStart: true, canEverStart: true };
    if (isTerminationRequested(status)) return { canStart: false, canEverStart: false };
    if (!this.allowStaticPodStart(status.fullname, uid)) {
      this.workQueue.enqueue(uid, jitter(this.backOffPeriodMs, WORKER_BACKOFF_PERIOD_JITTER_FACTOR, this.random));
      return { canStart: false, canEverStart: true };
    }
    return { canStart: true, canEverStart: true };
  }

  /** Go allowStaticPodStart: no other static pod with the name runs, and this one is next in line. */
  private allowStaticPodStart(fullname: string, uid: string): boolean {
    const startedUid = this.startedStaticPodsByFullname.get(fullname);
    if (startedUid !== undefined) return startedUid === uid;
    let waiting = this.waitingToStartStaticPodsByFullname.get(fullname) ?? [];
    for (let i = 0; i < waiting.length; i++) {
      const waitingUid = waiting[i];
      const status = this.statuses.get(waitingUid);
      if (!status || isTerminationRequested(status) || isTerminated(status)) continue;
      if (waitingUid !== uid) {
        this.waitingToStartStaticPodsByFullname.set(fullname, waiting.slice(i));
        return false;
      }
      waiting = waiting.slice(i + 1);
      break;
    }
    if (waiting.length > 0) this.waitingToStartStaticPodsByFullname.set(fullname, waiting);
    else this.waitingToStartStaticPodsByFullname.delete(fullname);
    this.startedStaticPodsByFullname.set(fullname, uid);
    return true;
  }

  private cleanupUnstartedPod(uid: string, status: PodSyncStatus): void {
    status.finished = true;
    status.working = false;
    status.terminatedAt = this.clock.now();
    this.releaseStaticName(uid, status);
  }

  /** Marks that the worker saw the termination and returns the latest kill's status function. */
  private acknowledgeTerminating(uid: string): PodStatusFunc | undefined {
    const status = this.statuses.get(uid);
    if (!status) return undefined;
    if (status.terminatingAt !== undefined && !status.startedTerminating) {
      this.logger.v(4).info('Pod worker has observed request to terminate', { podUID: uid });
      status.startedTerminating = true;
    }
    return status.statusPostTerminating[status.statusPostTerminating.length - 1];
  }

  /** syncPod reported a terminal phase: move to terminating now. */
  private completeSync(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    if (status.terminatingAt === undefined) status.terminatingAt = this.clock.now();
    status.startedTerminating = true;
    this.requeueLastPodUpdate(uid, status);
  }

  /** syncTerminatingPod succeeded: no container runs or will start; kills are complete. */
  private completeTerminating(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    status.terminatedAt = this.clock.now();
    const callbacks = status.notifyPostTerminating;
    status.notifyPostTerminating = [];
    status.statusPostTerminating = [];
    for (const callback of callbacks) this.notify(callback);
    this.requeueLastPodUpdate(uid, status);
  }

  /** A runtime-only pod is stopped: nothing more to track. */
  private completeTerminatingRuntimePod(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    status.terminatedAt = this.clock.now();
    status.finished = true;
    status.working = false;
    this.releaseStaticName(uid, status);
    this.statuses.delete(uid);
  }

  /** syncTerminatedPod succeeded: the pod is finished until syncKnownPods forgets it. */
  private completeTerminated(uid: string): void {
    const status = this.statuses.get(uid);
    if (!status) return;
    status.finished = true;
    status.working = false;
    this.releaseStaticName(uid, status);
  }

  /**
   * Schedules the next sync (at once after a phase change, after the resync interval after success,
   * after the backoff after failure) and says whether the worker has more to do now.
   */
  private completeWork(uid: string, phaseTransition: boolean, error: unknown): boolean {
    let delay: number;
    if (phaseTransition) delay = 0;
    else if (error === undefined) delay = jitter(this.resyncIntervalMs, WORKER_RESYNC_INTERVAL_JITTER_FACTOR, this.random);
    else if (error instanceof Error && error.message.includes(NETWORK_NOT_READY_ERROR_MSG)) {
      delay = jitter(BACKOFF_ON_TRANSIENT_ERROR_PERIOD_MS, WORKER_BACKOFF_PERIOD_JITTER_FACTOR, this.random);
    } else delay = jitter(this.backOffPeriodMs, WORKER_BACKOFF_PERIOD_JITTER_FACTOR, this.random);
    this.workQueue.enqueue(uid, delay);

    const status = this.statuses.get(uid);
    if (!status) return false;
    if (status.pendingUpdate) return true;
    status.working = false;
    return false;
  }

  /** Replays the last update so the worker moves to its next phase without waiting for the kubelet. */
  private requeueLastPodUpdate(uid: string, status: PodSyncStatus): void {
    if (status.pendingUpdate || !status.activeUpdate) return;
    const active = status.activeUpdate;
    status.pendingUpdate = { ...active, killPodOptions: active.killPodOptions ? { ...active.killPodOptions } : undefined };
    status.working = true;
    this.kick(uid);
  }

  /**
   * Go removeTerminatedWorker: forgets a finished worker; an orphan that is not finished is driven
   * towards termination instead (it counts as deleted). Returns true when the worker was removed.
   */
  private removeTerminatedWorker(uid: string, status: PodSyncStatus, orphaned: boolean): boolean {
    if (!status.finished) {
      if (!orphaned) return false;
      status.deleted = true;
      if (!isStarted(status) && !status.observedRuntime) {
        // Never started: forget it without any sync.
        this.logger.v(4).info('Pod is orphaned and has not been started', { podUID: uid });
      } else if (!isTerminationRequested(status)) {
        status.terminatingAt = this.clock.now();
        const pod = status.activeUpdate?.pod;
        status.gracePeriod = pod ? calculateEffectiveGracePeriod(status.gracePeriod, pod, undefined).gracePeriod : 1;
        // Unlike UpdatePod, Go does not cancel a running sync here: it finishes, then the worker terminates.
        this.requeueLastPodUpdate(uid, status);
        this.logger.v(4).info('Pod is orphaned and still running, began terminating', { podUID: uid });
        return false;
      } else {
        this.requeueLastPodUpdate(uid, status);
        this.logger.v(4).info('Pod is orphaned and still terminating, notified the pod worker', { podUID: uid });
        return false;
      }
    }
    this.logger.v(4).info(
      status.restartRequested
        ? 'Pod has been terminated but another pod with the same UID was created, remove history to allow restart'
        : 'Pod has been terminated and is no longer known to the kubelet, remove all history',
      { podUID: uid },
    );
    this.statuses.delete(uid);
    this.releaseStaticName(uid, status);
    return true;
  }

  private releaseStaticName(uid: string, status: PodSyncStatus): void {
    if (this.startedStaticPodsByFullname.get(status.fullname) === uid) this.startedStaticPodsByFullname.delete(status.fullname);
  }

  private notify(callback: (() => void) | undefined): void {
    if (!callback) return;
    try {
      callback();
    } catch (err) {
      this.logger.error('Kill completion callback failed', err);
    }
  }
}

function podIdentity(pod: V1Pod): { uid: string; name: string; namespace: string } {
  return { uid: pod.metadata?.uid ?? '', name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '' };
}

function newSyncStatus(now: number, fullname: string): PodSyncStatus {
  return {
    controller: undefined,
    fullname,
    working: false,
    pendingUpdate: undefined,
    activeUpdate: undefined,
    syncedAt: now,
    startedAt: undefined,
    terminatingAt: undefined,
    terminatedAt: undefined,
    gracePeriod: 0,
    notifyPostTerminating: [],
    statusPostTerminating: [],
    startedTerminating: false,
    deleted: false,
    evicted: false,
    finished: false,
    restartRequested: false,
    observedRuntime: false,
    lastSyncTime: 0,
  };
}
