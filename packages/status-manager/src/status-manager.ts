// The kubelet's status manager (Go: pkg/kubelet/status/status_manager.go): the source of truth of
// pod statuses on this node. It keeps a versioned status per pod and syncs changed ones to the API
// server as strategic merge patches of pods/status, batched (a pod changed many times before its
// sync sends one patch), rate limited, retried with backoff and reconciled every syncPeriodMs.
import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import {
  apiCallOptions,
  apiErrorCode,
  BucketRateLimiter,
  isAbortError,
  isConflict,
  isInvalid,
  isMirrorPod,
  isNotFound,
  isStaticPod,
  ItemExponentialFailureRateLimiter,
  defaultLogger,
  PatchContentType,
  podRef,
  RateLimitingQueue,
  realClock,
  type Clock,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import type { KubeClient } from './client.js';
import {
  ContainerReasonStatusUnknown,
  generateContainersReadyCondition,
  generatePodReadyCondition,
  getPodCondition,
  isPodPhaseTerminal,
  PodConditionType,
  PodPhase,
} from './generate.js';
import { podStatusToJson } from './json.js';
import { preparePodStatusPatch } from './patch.js';
import { checkContainerStateTransition, hasPodInitialized, initializedContainers, isPodStatusByKubeletEqual, keepPhaseReason, mergePodStatus, normalizeStatus } from './status-util.js';

/** The pods the kubelet knows (Go: the parts of pod.Manager the status manager uses). */
export interface PodManagerLike {
  getPodByUid(uid: string): V1Pod | undefined;
  /** The mirror pod (API server copy) of a static pod, if the kubelet has seen one. */
  getMirrorPodByPod(pod: V1Pod): V1Pod | undefined;
  /** A mirror pod's UID to its static pod's UID; any other UID unchanged. Default: identity. */
  translatePodUID?(uid: string): string;
}

/** Whether a pod's containers could still be running (Go: PodDeletionSafetyProvider, from the pod workers). */
export interface PodDeletionSafety {
  podCouldHaveRunningContainers(uid: string): boolean;
}

/** Gives the cached status of a pod (Go: PodStatusProvider). */
export interface PodStatusProvider {
  getPodStatus(uid: string): V1PodStatus | undefined;
}

/** What the status manager offers (Go: status.Manager). */
export interface StatusManager extends PodStatusProvider {
  /** Starts syncing to the API server (a no-op without a client). Returns at once. */
  start(): void;
  /** Stops syncing; resolves when no timer or request of ours is left. Statuses stay cached. */
  stop(): Promise<void>;
  /** Caches a new status for the pod (deep-copied) and schedules its sync. */
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  /** Sets one container's readiness (by containerID type://id) and recomputes Ready/ContainersReady. */
  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void;
  /** Sets one container's started flag (by containerID). */
  setContainerStartup(podUid: string, containerId: string, started: boolean): void;
  /** Marks every container that is not terminated as terminated and the pod terminal (end of its life). */
  terminatePod(pod: V1Pod): void;
  /** Forgets the statuses of pods not in desiredUids. */
  removeOrphanedStatuses(desiredUids: Iterable<string>): void;
}

export interface StatusManagerOptions {
  /** The API client; undefined runs standalone: statuses are only kept locally. */
  kubeClient?: KubeClient;
  podManager: PodManagerLike;
  /** Default: no pod could have running containers. */
  podDeletionSafety?: PodDeletionSafety;
  clock?: Clock;
  logger?: Logger;
  /** Period of the full reconcile against the pods the pod manager holds. Default 10 s (Go's syncPeriod). */
  syncPeriodMs?: number;
  /** API requests per second of the status sync (the kubelet's --kube-api-qps). Default 50. */
  qps?: number;
  /** Token bucket size (--kube-api-burst). Default 100. */
  burst?: number;
  /** Pods synced in parallel (each pod is only ever synced by one at a time). Default 4; Go syncs one at a time. */
  concurrency?: number;
  /** First retry delay after a failed sync, doubling up to retryMaxMs. Default 200 ms. */
  retryBaseMs?: number;
  /** Default: syncPeriodMs. */
  retryMaxMs?: number;
  /**
   * GET the pod before every patch, as Go does. Default false: the patch is computed against the
   * last copy seen (the previous patch's answer or the pod manager's) and carries its
   * resourceVersion, so a stale copy gets 409 and is refetched.
   */
  getBeforePatch?: boolean;
}

interface VersionedPodStatus {
  /** Monotonic per pod; a sync records the version it wrote. */
  version: number;
  podName: string;
  podNamespace: string;
  /** When the oldest change not yet written was made (for sync latency). */
  at: number;
  /** Set by terminatePod: the pod is done and, once deleted in the API, may be removed. */
  podIsFinished: boolean;
  status: V1PodStatus;
}

export interface StatusManagerStats {
  /** Pod syncs run (including those that found nothing to send). */
  syncs: number;
  gets: number;
  patches: number;
  deletes: number;
  /** 409/422 answers that made us refetch and retry. */
  conflicts: number;
  /** Syncs that failed and were requeued. */
  failures: number;
  /** Time from a status change to its patch, last 1,000 (ms). */
  syncLatenciesMs: number[];
}

/** Attempts with the resourceVersion precondition before a last one with the UID precondition only (Go's patch). */
const MAX_ATTEMPTS = 3;

const clone = <T>(v: T): T => structuredClone(v);
const podKey = (ns: string, name: string): string => `${ns}/${name}`;
const numericRv = (pod: V1Pod | undefined): number => {
  const n = Number(pod?.metadata?.resourceVersion);
  return Number.isFinite(n) ? n : -1;
};

export class KubeletStatusManager implements StatusManager {
  private readonly kubeClient: KubeClient | undefined;
  private readonly podManager: PodManagerLike;
  private readonly podDeletionSafety: PodDeletionSafety;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly syncPeriodMs: number;
  private readonly concurrency: number;
  private readonly getBeforePatch: boolean;
  private readonly podStatuses = new Map<string, VersionedPodStatus>();
  /** API pod UID (the mirror pod's for static pods) -> the version last written. */
  private readonly apiStatusVersions = new Map<string, number>();
  /** Pod UID -> the API server's copy we last saw (patch answers, GETs). */
  private readonly serverCopies = new Map<string, V1Pod>();
  /** Pods whose next sync must run even if their version was written (reconcile, deletion). */
  private readonly forced = new Set<string>();
  private readonly bucket: BucketRateLimiter<string>;
  private queue: RateLimitingQueue<string>;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly counters: StatusManagerStats = { syncs: 0, gets: 0, patches: 0, deletes: 0, conflicts: 0, failures: 0, syncLatenciesMs: [] };
  private abort: AbortController | undefined;
  private ticker: TimerHandle | undefined;
  private workers: Promise<void>[] = [];
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: StatusManagerOptions) {
    this.kubeClient = opts.kubeClient;
    this.podManager = opts.podManager;
    this.podDeletionSafety = opts.podDeletionSafety ?? { podCouldHaveRunningContainers: () => false };
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.syncPeriodMs = opts.syncPeriodMs ?? 10_000;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.getBeforePatch = opts.getBeforePatch ?? false;
    this.bucket = new BucketRateLimiter<string>(opts.qps ?? 50, opts.burst ?? 100, this.clock);
    this.retryBaseMs = opts.retryBaseMs ?? 200;
    this.retryMaxMs = opts.retryMaxMs ?? this.syncPeriodMs;
    this.queue = this.newQueue();
  }

  private newQueue(): RateLimitingQueue<string> {
    return new RateLimitingQueue<string>({ clock: this.clock, rateLimiter: new ItemExponentialFailureRateLimiter<string>(this.retryBaseMs, this.retryMaxMs) });
  }

  start(): void {
    if (this.abort) return;
    if (!this.kubeClient) {
      this.logger.info('Kubernetes client is nil, not starting status manager');
      return;
    }
    this.logger.info('Starting to sync pod status with apiserver');
    this.abort = new AbortController();
    if (this.queue.shuttingDown()) this.queue = this.newQueue();
    const signal = this.abort.signal;
    this.ticker = this.clock.setInterval(() => this.syncBatch(true), this.syncPeriodMs);
    for (let i = 0; i < this.concurrency; i++) this.workers.push(this.worker(signal));
    // Statuses set before start() are synced now.
    for (const uid of this.podStatuses.keys()) this.queue.add(uid);
  }

  async stop(): Promise<void> {
    const abort = this.abort;
    if (!abort) return;
    this.ticker?.cancel();
    this.ticker = undefined;
    abort.abort();
    await Promise.allSettled(this.workers);
    this.workers = [];
    this.abort = undefined;
    this.queue.shutDown();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  getPodStatus(uid: string): V1PodStatus | undefined {
    const entry = this.podStatuses.get(this.translate(uid));
    return entry ? clone(entry.status) : undefined;
  }

  /** The version of the cached status (0 when none), and the version written to the API server. */
  statusVersion(uid: string): { version: number; written: number | undefined } {
    const entry = this.podStatuses.get(uid);
    const pod = this.podManager.getPodByUid(uid);
    const apiUid = pod && isStaticPod(pod) ? this.podManager.getMirrorPodByPod(pod)?.metadata?.uid : uid;
    return { version: entry?.version ?? 0, written: apiUid ? this.apiStatusVersions.get(apiUid) : undefined };
  }

  stats(): StatusManagerStats {
    return { ...this.counters, syncLatenciesMs: [...this.counters.syncLatenciesMs] };
  }

  /** Pods waiting for a sync (queued, retrying, or being synced). */
  pending(): number {
    return this.queue.len() + this.queue.delayedLen() + this.inFlight;
  }

  /** Resolves once no sync is queued, waiting for a retry, or running (or the manager stops). */
  whenIdle(): Promise<void> {
    if (!this.abort || this.pending() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    // A deletionTimestamp forces an update: a pod that stopped changing must still be deleted.
    this.updateStatusInternal(pod, clone(status), pod.metadata?.deletionTimestamp !== undefined, false);
  }

  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void {
    const pod = this.podManager.getPodByUid(podUid);
    if (!pod) {
      this.logger.v(4).info('Pod has been deleted, no need to update readiness', { podUID: podUid });
      return;
    }
    const cached = this.podStatuses.get(podUid);
    if (!cached) {
      this.logger.info('Container readiness changed before pod has synced', { pod: podRef(pod), containerID: containerId });
      return;
    }
    const found = findContainerStatus(cached.status, containerId);
    if (!found) {
      this.logger.info('Container readiness changed for unknown container', { pod: podRef(pod), containerID: containerId });
      return;
    }
    if (found.ready === ready) {
      this.logger.v(4).info('Container readiness unchanged', { ready, pod: podRef(pod), containerID: containerId });
      return;
    }
    const status = clone(cached.status);
    findContainerStatus(status, containerId)!.ready = ready;
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    replaceOrAppendCondition(status, generatePodReadyCondition(pod, status.conditions, all, status.phase));
    replaceOrAppendCondition(status, generateContainersReadyCondition(pod, all, status.phase));
    this.updateStatusInternal(pod, status, false, false);
  }

  setContainerStartup(podUid: string, containerId: string, started: boolean): void {
    const pod = this.podManager.getPodByUid(podUid);
    if (!pod) {
      this.logger.v(4).info('Pod has been deleted, no need to update startup', { podUID: podUid });
      return;
    }
    const cached = this.podStatuses.get(podUid);
    if (!cached) {
      this.logger.info('Container startup changed before pod has synced', { pod: podRef(pod), containerID: containerId });
      return;
    }
    const found = findContainerStatus(cached.status, containerId);
    if (!found) {
      this.logger.info('Container startup changed for unknown container', { pod: podRef(pod), containerID: containerId });
      return;
    }
    if (found.started === started) return;
    const status = clone(cached.status);
    findContainerStatus(status, containerId)!.started = started;
    this.updateStatusInternal(pod, status, false, false);
  }

  terminatePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const cached = this.podStatuses.get(uid);
    const status = clone(cached?.status ?? pod.status ?? {});
    const unknown = (): V1ContainerStatus['state'] => ({
      terminated: { reason: ContainerReasonStatusUnknown, message: 'The container could not be located when the pod was terminated', exitCode: 137 },
    });
    // Once a pod has initialized, a container with no terminated state is counted as failed.
    if (hasPodInitialized(pod, status)) {
      for (const cs of status.containerStatuses ?? []) if (!cs.state?.terminated) cs.state = unknown();
    }
    // Init containers that started (all but a trailing run of waiting ones) likewise.
    for (const cs of initializedContainers(status.initContainerStatuses ?? [])) if (!cs.state?.terminated) cs.state = unknown();
    if (!isStaticPod(pod)) {
      if (!isPodPhaseTerminal(status.phase)) {
        if (status.phase === PodPhase.Running && cached) {
          this.logger.info('Terminal running pod should have already been marked as failed, programmer error', { pod: podRef(pod), podUID: uid });
        }
        this.logger.v(3).info('Marking terminal pod as failed', { oldPhase: status.phase, pod: podRef(pod), podUID: uid });
        status.phase = PodPhase.Failed;
      }
    }
    this.updateStatusInternal(pod, status, true, true);
  }

  removeOrphanedStatuses(desiredUids: Iterable<string>): void {
    const keep = desiredUids instanceof Set ? (desiredUids as Set<string>) : new Set(desiredUids);
    for (const uid of [...this.podStatuses.keys()]) {
      if (!keep.has(uid)) {
        this.logger.v(5).info('Removing pod from status map.', { podUID: uid });
        this.deletePodStatus(uid);
      }
    }
  }

  // ---- internals

  private translate(uid: string): string {
    return this.podManager.translatePodUID?.(uid) ?? uid;
  }

  private deletePodStatus(uid: string): void {
    this.podStatuses.delete(uid);
    this.serverCopies.delete(uid);
    this.forced.delete(uid);
  }

  /** Go's updateStatusInternal: checks, normalizes and versions a status, and queues its sync. */
  private updateStatusInternal(pod: V1Pod, status: V1PodStatus, forceUpdate: boolean, podIsFinished: boolean): void {
    const uid = pod.metadata?.uid ?? '';
    const cached = this.podStatuses.get(uid);
    let oldStatus: V1PodStatus;
    if (cached) {
      oldStatus = cached.status;
      if (!isStaticPod(pod) && cached.podIsFinished && !podIsFinished) {
        this.logger.info('Got unexpected podIsFinished=false, while podIsFinished=true in status cache, programmer error.', { pod: podRef(pod) });
        podIsFinished = true;
      }
    } else {
      oldStatus = this.podManager.getMirrorPodByPod(pod)?.status ?? pod.status ?? {};
    }

    const refused = checkContainerStateTransition(oldStatus, status, pod);
    if (refused) {
      this.logger.error('Status update on pod aborted', new Error(refused), { pod: podRef(pod) });
      return;
    }
    // A terminal phase is final, and so are the reason and message that came with it (an eviction's Evicted stays on a
    // pod whose container then exited 0).
    if (isPodPhaseTerminal(oldStatus.phase) && status.phase !== oldStatus.phase) {
      this.logger.error('Pod attempted illegal phase transition', undefined, { pod: podRef(pod), originalStatusPhase: oldStatus.phase, apiStatusPhase: status.phase });
      status.phase = oldStatus.phase;
      keepPhaseReason(status, oldStatus);
    }

    // Fields the API server set that a caller's status may not carry.
    if (!status.qosClass && (oldStatus.qosClass ?? pod.status?.qosClass)) status.qosClass = oldStatus.qosClass ?? pod.status?.qosClass;
    const now = this.clock.now();
    for (const type of [
      PodConditionType.ContainersReady,
      PodConditionType.Ready,
      PodConditionType.Initialized,
      PodConditionType.PodReadyToStartContainers,
      PodConditionType.PodScheduled,
      PodConditionType.DisruptionTarget,
    ]) {
      updateLastTransitionTime(status, oldStatus, type, now);
    }
    // The start time never changes once set.
    if (oldStatus.startTime) status.startTime = oldStatus.startTime;
    else if (!status.startTime) status.startTime = new Date(now);
    normalizeStatus(pod, status);

    if (cached && !forceUpdate && isPodStatusByKubeletEqual(cached.status, status)) {
      this.logger.v(3).info('Ignoring same status for pod', { pod: podRef(pod) });
      return;
    }
    const unwritten = cached !== undefined && (this.apiStatusVersionFor(uid, pod) ?? 0) < cached.version;
    this.podStatuses.set(uid, {
      status,
      version: (cached?.version ?? 0) + 1,
      podName: pod.metadata?.name ?? '',
      podNamespace: pod.metadata?.namespace ?? '',
      podIsFinished,
      at: unwritten ? cached!.at : now,
    });
    if (forceUpdate) this.forced.add(uid);
    if (this.abort) this.queue.add(uid);
  }

  private apiStatusVersionFor(uid: string, pod?: V1Pod): number | undefined {
    const p = pod ?? this.podManager.getPodByUid(uid);
    if (p && isStaticPod(p)) {
      const mirrorUid = this.podManager.getMirrorPodByPod(p)?.metadata?.uid;
      return mirrorUid ? this.apiStatusVersions.get(mirrorUid) : undefined;
    }
    return this.apiStatusVersions.get(uid);
  }

  /** Go's syncBatch(all): queues every pod whose status is unwritten, differs from the API's, or may be deleted. */
  syncBatch(all: boolean): number {
    let queued = 0;
    if (all) {
      const mirrors = new Set<string>();
      for (const uid of this.podStatuses.keys()) {
        const pod = this.podManager.getPodByUid(uid);
        const m = pod && isStaticPod(pod) ? this.podManager.getMirrorPodByPod(pod)?.metadata?.uid : undefined;
        if (m) mirrors.add(m);
      }
      for (const apiUid of [...this.apiStatusVersions.keys()]) {
        if (!this.podStatuses.has(apiUid) && !mirrors.has(apiUid)) this.apiStatusVersions.delete(apiUid);
      }
    }
    for (const [uid, entry] of this.podStatuses) {
      const target = this.apiTarget(uid);
      if (!target) continue;
      const written = this.apiStatusVersions.get(target.apiUid);
      if (written === undefined || written < entry.version) {
        this.queue.add(uid);
        queued++;
      } else if (all) {
        const pod = this.podManager.getPodByUid(uid);
        if ((pod && this.canBeDeleted(pod, entry, uid)) || this.needsReconcile(uid, entry.status)) {
          this.forced.add(uid);
          this.queue.add(uid);
          queued++;
        }
      }
    }
    return queued;
  }

  /** The API pod a status goes to: the pod itself, or the mirror pod of a static pod (undefined: none yet). */
  private apiTarget(uid: string): { apiUid: string; apiPod: V1Pod | undefined; static: boolean } | undefined {
    const pod = this.podManager.getPodByUid(uid);
    if (pod && isStaticPod(pod)) {
      const mirror = this.podManager.getMirrorPodByPod(pod);
      if (!mirror?.metadata?.uid) return undefined;
      return { apiUid: mirror.metadata.uid, apiPod: mirror, static: true };
    }
    return { apiUid: uid, apiPod: pod, static: false };
  }

  /** Go's needsReconcile: the API server's status (as the pod manager saw it) differs from ours. */
  private needsReconcile(uid: string, status: V1PodStatus): boolean {
    let pod = this.podManager.getPodByUid(uid);
    if (!pod) return false;
    if (isStaticPod(pod)) {
      pod = this.podManager.getMirrorPodByPod(pod);
      if (!pod) return false;
    }
    const apiStatus = normalizeStatus(pod, clone(pod.status ?? {}));
    if (isPodStatusByKubeletEqual(apiStatus, withoutFieldsTheServerDrops(apiStatus, status))) return false;
    this.logger.v(3).info('Pod status is inconsistent with cached status for pod, a reconciliation should be triggered', { pod: podRef(pod) });
    return true;
  }

  /** Go's canBeDeleted: deleted in the API, terminal there, finished here, and nothing can still run. */
  private canBeDeleted(apiPod: V1Pod, entry: VersionedPodStatus, uid: string): boolean {
    if (!apiPod.metadata?.deletionTimestamp || isMirrorPod(apiPod)) return false;
    if (!isPodPhaseTerminal(apiPod.status?.phase)) {
      this.logger.v(3).info('Delaying pod deletion as the phase is non-terminal', { phase: entry.status.phase, pod: podRef(apiPod), podUID: uid });
      return false;
    }
    if (!entry.podIsFinished) return false;
    return !this.podDeletionSafety.podCouldHaveRunningContainers(uid);
  }

  private async worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      let uid: string | undefined;
      try {
        uid = await this.queue.get(signal);
      } catch {
        return; // aborted
      }
      if (uid === undefined) return;
      this.inFlight++;
      try {
        await this.syncPod(uid, signal);
        this.queue.forget(uid);
      } catch (err) {
        if (!(signal.aborted && isAbortError(err))) {
          this.counters.failures++;
          this.logger.info('Failed to update status for pod', { podUID: uid, err: errText(err) });
          if (this.podStatuses.has(uid)) this.queue.addRateLimited(uid);
        }
      } finally {
        this.queue.done(uid);
        this.inFlight--;
      }
      if (signal.aborted) return;
      this.notifyIdle();
    }
  }

  private notifyIdle(): void {
    if (this.pending() > 0 || this.idleWaiters.length === 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async request<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    const wait = this.bucket.when('api');
    if (wait > 0) await this.clock.sleep(wait, signal);
    if (signal.aborted) throw signal.reason ?? new DOMException('aborted', 'AbortError');
    return fn();
  }

  private async getPod(signal: AbortSignal, namespace: string, name: string): Promise<V1Pod | undefined> {
    this.counters.gets++;
    try {
      return await this.request(signal, () => this.kubeClient!.readNamespacedPod({ name, namespace }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Go's syncPod: writes one pod's latest status, then deletes the pod if it is done. */
  private async syncPod(uid: string, signal: AbortSignal): Promise<void> {
    const entry = this.podStatuses.get(uid);
    if (!entry) return;
    const target = this.apiTarget(uid);
    if (!target) {
      this.logger.v(5).info('Static pod does not have a corresponding mirror pod; skipping', { podUID: uid, pod: podKey(entry.podNamespace, entry.podName) });
      return;
    }
    const force = this.forced.delete(uid);
    const written = this.apiStatusVersions.get(target.apiUid);
    if (!force && written !== undefined && written >= entry.version) return;
    this.counters.syncs++;
    const { podNamespace: namespace, podName: name } = entry;

    let base = this.serverCopies.get(uid);
    if (target.apiPod?.metadata?.resourceVersion && numericRv(target.apiPod) > numericRv(base)) base = target.apiPod;
    let fetched = false;
    if (!base || this.getBeforePatch) {
      base = await this.getPod(signal, namespace, name);
      fetched = true;
      if (!base) {
        this.logger.v(3).info('Pod does not exist on the server', { podUID: uid, pod: podKey(namespace, name) });
        return;
      }
    }

    let result: V1Pod | undefined;
    for (let attempt = 1; ; attempt++) {
      const translated = this.translate(base.metadata?.uid ?? '');
      if (translated && translated !== uid && !(target.static && translated === base.metadata?.uid)) {
        if (!fetched) {
          // Our copy may just be old: check with the API server before concluding anything.
          base = await this.getPod(signal, namespace, name);
          fetched = true;
          if (!base) return;
          continue;
        }
        this.logger.v(2).info('Pod was deleted and then recreated, skipping status update', { pod: podKey(namespace, name), oldPodUID: uid, podUID: translated });
        this.deletePodStatus(uid);
        return;
      }
      if (target.static && base.metadata?.uid !== target.apiUid) {
        // A mirror pod the pod manager has not seen yet: wait until it has.
        this.logger.v(3).info('Mirror pod changed, waiting for the pod manager to see it', { pod: podKey(namespace, name) });
        this.serverCopies.delete(uid);
        return;
      }
      const merged = mergePodStatus(base.status ?? {}, entry.status, this.podDeletionSafety.podCouldHaveRunningContainers(uid), this.clock.now());
      keepServerOwnedFields(base.status ?? {}, merged);
      const patch = preparePodStatusPatch(base.metadata!.uid!, podStatusToJson(base.status), podStatusToJson(merged), attempt < MAX_ATTEMPTS ? base.metadata?.resourceVersion : undefined);
      if (patch.unchanged) {
        this.logger.v(3).info('Status for pod is up-to-date', { pod: podKey(namespace, name), statusVersion: entry.version });
        result = base;
        break;
      }
      try {
        this.counters.patches++;
        this.logger.v(3).info('Patch status for pod', { pod: podKey(namespace, name), podUID: uid, patch: patch.body });
        result = await this.request(signal, () =>
          this.kubeClient!.patchNamespacedPodStatus({ name, namespace, body: patch.body }, apiCallOptions({ contentType: PatchContentType.StrategicMergePatch })),
        );
        this.logger.v(3).info('Status for pod updated successfully', { pod: podKey(namespace, name), statusVersion: entry.version });
        break;
      } catch (err) {
        if (isNotFound(err)) {
          this.logger.v(3).info('Pod does not exist on the server', { podUID: uid, pod: podKey(namespace, name) });
          this.serverCopies.delete(uid);
          return;
        }
        if ((isConflict(err) || isInvalid(err)) && attempt < MAX_ATTEMPTS) {
          // Our copy was stale (409), or the name now belongs to another pod (422, uid immutable): refetch.
          this.counters.conflicts++;
          this.logger.v(3).info('Status patch refused, refetching the pod', { pod: podKey(namespace, name), code: apiErrorCode(err) });
          base = await this.getPod(signal, namespace, name);
          fetched = true;
          if (!base) return;
          continue;
        }
        throw err;
      }
    }

    this.serverCopies.set(uid, result);
    this.apiStatusVersions.set(result.metadata?.uid ?? target.apiUid, entry.version);
    const latency = this.clock.now() - entry.at;
    this.counters.syncLatenciesMs.push(latency);
    if (this.counters.syncLatenciesMs.length > 1000) this.counters.syncLatenciesMs.shift();

    if (this.canBeDeleted(result, entry, uid)) {
      this.counters.deletes++;
      try {
        await this.request(signal, () =>
          this.kubeClient!.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0, preconditions: { uid: result!.metadata!.uid } } }),
        );
      } catch (err) {
        if (!isNotFound(err)) {
          this.forced.add(uid);
          throw err;
        }
      }
      this.logger.v(3).info('Pod fully terminated and removed from etcd', { pod: podKey(namespace, name) });
      this.deletePodStatus(uid);
    }
  }
}

/** Fields the API server (or its admission) sets that a status built without them must not clear. */
function keepServerOwnedFields(apiStatus: V1PodStatus, merged: V1PodStatus): void {
  if (!merged.qosClass && apiStatus.qosClass) merged.qosClass = apiStatus.qosClass;
  if (!merged.hostIP && apiStatus.hostIP) {
    merged.hostIP = apiStatus.hostIP;
    if (apiStatus.hostIPs) merged.hostIPs = clone(apiStatus.hostIPs);
  }
}

function findContainerStatus(status: V1PodStatus, containerId: string): V1ContainerStatus | undefined {
  return status.containerStatuses?.find((c) => c.containerID === containerId) ?? status.initContainerStatuses?.find((c) => c.containerID === containerId);
}

function replaceOrAppendCondition(status: V1PodStatus, condition: V1PodCondition): void {
  status.conditions ??= [];
  const i = status.conditions.findIndex((c) => c.type === condition.type);
  if (i >= 0) status.conditions[i] = condition;
  else status.conditions.push(condition);
}

/** Go's updateLastTransitionTime: kept when the status is unchanged, now otherwise. */
function updateLastTransitionTime(status: V1PodStatus, oldStatus: V1PodStatus, type: string, now: number): void {
  const condition = getPodCondition(status.conditions, type);
  if (!condition) return;
  const old = getPodCondition(oldStatus.conditions, type);
  condition.lastTransitionTime = old && old.status === condition.status && old.lastTransitionTime ? old.lastTransitionTime : new Date(now);
}

function errText(err: unknown): string {
  const code = apiErrorCode(err);
  if (code !== undefined) return `HTTP ${code}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * An API server older than a status field drops it from every write (v1.20 has no status.hostIPs, added in v1.28):
 * our status would then never equal the server's, and every sync period would patch every pod again. A hostIPs the
 * server has no field for, beside the same hostIP, is not a difference.
 */
function withoutFieldsTheServerDrops(apiStatus: V1PodStatus, status: V1PodStatus): V1PodStatus {
  if (apiStatus.hostIPs !== undefined || status.hostIPs === undefined || apiStatus.hostIP !== status.hostIP) return status;
  const { hostIPs: _dropped, ...rest } = status;
  return rest;
}
