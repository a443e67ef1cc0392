// Test doubles of @kubelet-ts/runtime-manager, published as `@kubelet-ts/runtime-manager/testing`.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { abortReason } from '@kubelet-ts/core';
import type {
  Backoff,
  ContainerRuntime,
  ContainerStatus,
  PodStatus,
  PodSyncResult,
  RuntimePod,
  RuntimeStatus,
} from '@kubelet-ts/core';
import { hashContainer } from './hash.js';

export interface SyncPodCall {
  pod: V1Pod;
  podStatus: PodStatus;
  pullSecrets: V1Secret[];
  backoff: Backoff;
  /** The signal the caller passed, if any. */
  signal?: AbortSignal;
}

export interface KillPodCall {
  pod: V1Pod | undefined;
  runningPod: RuntimePod;
  gracePeriodOverrideSeconds?: number;
  /** The signal the caller passed, if any. */
  signal?: AbortSignal;
}

export type FakeRuntimeMethod = 'version' | 'status' | 'getPods' | 'getPodStatus' | 'syncPod' | 'killPod';

export interface FakeContainerRuntimeOptions {
  /** The runtime name, used as the container id type. Default 'fake'. */
  runtimeType?: string;
  /**
   * When true, syncPod makes the pod's sandbox and every spec container running, and killPod makes
   * them exited, so pods/podStatuses follow the calls like a runtime would. Default false.
   */
  simulate?: boolean;
  /** Source of timestamps in ms. Default Date.now. */
  now?: () => number;
}

/**
 * An in-memory ContainerRuntime for tests of the PLEG, pod workers and the kubelet (Go:
 * containertest.FakeRuntime): set what getPods/getPodStatus report, inspect the syncPod/killPod
 * calls, inject errors.
 */
export class FakeContainerRuntime implements ContainerRuntime {
  /** What getPods(true) returns; getPods(false) keeps running containers and ready sandboxes. */
  pods: RuntimePod[] = [];
  /** What getPodStatus returns, by pod UID; a UID not here gets an empty status. */
  readonly podStatuses = new Map<string, PodStatus>();
  runtimeStatus: RuntimeStatus = {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ],
  };
  /** What syncPod returns: a fixed result or a function of the call. Default: success, no steps. */
  syncPodResult: PodSyncResult | ((call: SyncPodCall) => PodSyncResult | Promise<PodSyncResult>) = { syncResults: [] };
  readonly syncPodCalls: SyncPodCall[] = [];
  readonly killPodCalls: KillPodCall[] = [];
  readonly getPodStatusCalls: Array<{ uid: string; name: string; namespace: string }> = [];
  /** Every method called, in order. */
  readonly called: FakeRuntimeMethod[] = [];
  private readonly queuedErrors = new Map<FakeRuntimeMethod, Error[]>();
  private readonly persistentErrors = new Map<FakeRuntimeMethod, Error>();
  private readonly runtimeType: string;
  private readonly simulate: boolean;
  private readonly now: () => number;
  private nextId = 1;

  constructor(opts: FakeContainerRuntimeOptions = {}) {
    this.runtimeType = opts.runtimeType ?? 'fake';
    this.simulate = opts.simulate ?? false;
    this.now = opts.now ?? Date.now;
  }

  /** Makes the next call of method fail with error (every call until clearErrors() with persistent). */
  injectError(method: FakeRuntimeMethod, error: Error, opts: { persistent?: boolean } = {}): void {
    if (opts.persistent) this.persistentErrors.set(method, error);
    else this.queuedErrors.set(method, [...(this.queuedErrors.get(method) ?? []), error]);
  }

  clearErrors(): void {
    this.queuedErrors.clear();
    this.persistentErrors.clear();
  }

  /** Replaces the pods getPods reports. */
  setPods(pods: RuntimePod[]): void {
    this.pods = pods;
  }

  /** Sets what getPodStatus reports for status.id. */
  setPodStatus(status: PodStatus): void {
    this.podStatuses.set(status.id, status);
  }

  private record(method: FakeRuntimeMethod): void {
    this.called.push(method);
    const queued = this.queuedErrors.get(method);
    if (queued && queued.length > 0) throw queued.shift()!;
    const persistent = this.persistentErrors.get(method);
    if (persistent) throw persistent;
  }

  type(): string {
    return this.runtimeType;
  }

  async version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }> {
    this.record('version');
    return { runtimeName: this.runtimeType, runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async status(): Promise<RuntimeStatus> {
    this.record('status');
    return structuredClone(this.runtimeStatus);
  }

  async getPods(all: boolean): Promise<RuntimePod[]> {
    this.record('getPods');
    const pods = structuredClone(this.pods);
    if (all) return pods;
    return pods
      .map((p) => ({ ...p, containers: p.containers.filter((c) => c.state === 'running'), sandboxes: p.sandboxes.filter((s) => s.state === 'running') }))
      .filter((p) => p.containers.length > 0 || p.sandboxes.length > 0);
  }

  async getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    this.getPodStatusCalls.push({ uid, name, namespace });
    this.record('getPodStatus');
    const status = this.podStatuses.get(uid);
    if (status) return structuredClone(status);
    return { id: uid, name, namespace, ips: [], containerStatuses: [], sandboxStatuses: [], timestamp: this.now() };
  }

  /** Records the call; a signal already aborted rejects with its reason, as the real runtime manager does. */
  async syncPod(pod: V1Pod, podStatus: PodStatus, pullSecrets: V1Secret[], backoff: Backoff, options?: { signal?: AbortSignal }): Promise<PodSyncResult> {
    const call: SyncPodCall = { pod, podStatus, pullSecrets, backoff };
    if (options?.signal) call.signal = options.signal;
    this.syncPodCalls.push(call);
    this.record('syncPod');
    if (options?.signal?.aborted) throw abortReason(options.signal);
    const result = typeof this.syncPodResult === 'function' ? await this.syncPodResult(call) : structuredClone(this.syncPodResult);
    if (this.simulate) this.simulateRunning(pod);
    return result;
  }

  /** Records the call; a signal already aborted rejects with its reason, as the real runtime manager does. */
  async killPod(pod: V1Pod | undefined, runningPod: RuntimePod, gracePeriodOverrideSeconds?: number, options?: { signal?: AbortSignal }): Promise<void> {
    const call: KillPodCall = { pod, runningPod, gracePeriodOverrideSeconds };
    if (options?.signal) call.signal = options.signal;
    this.killPodCalls.push(call);
    this.record('killPod');
    if (options?.signal?.aborted) throw abortReason(options.signal);
    if (this.simulate) this.simulateKilled(runningPod.id);
  }

  /** UIDs of the pods syncPod was called for, in call order. */
  syncedPodUids(): string[] {
    return this.syncPodCalls.map((c) => c.pod.metadata?.uid ?? '');
  }

  private simulateRunning(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const now = this.now();
    const existing = this.podStatuses.get(uid);
    const sandboxReady = existing?.sandboxStatuses.find((s) => s.state === 'SANDBOX_READY');
    const sandboxId = sandboxReady?.id ?? `sandbox-${this.nextId++}`;
    const containerStatuses: ContainerStatus[] = (pod.spec?.containers ?? []).map((c) => {
      const current = existing?.containerStatuses.find((s) => s.name === c.name && s.state === 'running');
      return (
        current ?? {
          id: { type: this.runtimeType, id: `container-${this.nextId++}` },
          name: c.name,
          state: 'running',
          createdAt: now,
          startedAt: now,
          exitCode: 0,
          image: c.image ?? '',
          imageId: c.image ?? '',
          hash: hashContainer(c),
          restartCount: 0,
        }
      );
    });
    const status: PodStatus = {
      id: uid,
      name: pod.metadata?.name ?? '',
      namespace: pod.metadata?.namespace ?? '',
      // A host-network sandbox has no IP of its own, as with real runtimes: the kubelet reports the node's.
      ips: pod.spec?.hostNetwork ? [] : ['10.0.0.1'],
      containerStatuses,
      sandboxStatuses: sandboxReady
        ? existing!.sandboxStatuses
        : [
            {
              id: sandboxId,
              name: pod.metadata?.name ?? '',
              namespace: pod.metadata?.namespace ?? '',
              uid,
              attempt: 0,
              state: 'SANDBOX_READY',
              createdAt: now,
              ip: pod.spec?.hostNetwork ? '' : '10.0.0.1',
              labels: {},
              annotations: {},
            },
          ],
      timestamp: now,
    };
    this.podStatuses.set(uid, status);
    this.pods = this.pods.filter((p) => p.id !== uid);
    this.pods.push({
      id: uid,
      name: status.name,
      namespace: status.namespace,
      createdAt: status.sandboxStatuses[0].createdAt,
      containers: containerStatuses.map((c) => ({ id: c.id, name: c.name, image: c.image, imageId: c.imageId, hash: c.hash, state: c.state, createdAt: c.createdAt })),
      sandboxes: status.sandboxStatuses.map((s) => ({ id: { type: this.runtimeType, id: s.id }, state: 'running', createdAt: s.createdAt })),
    });
  }

  private simulateKilled(uid: string): void {
    const now = this.now();
    const status = this.podStatuses.get(uid);
    if (status) {
      for (const c of status.containerStatuses) {
        if (c.state === 'running') {
          c.state = 'exited';
          c.exitCode = 137;
          c.finishedAt = now;
          c.reason = 'Error';
        }
      }
      for (const s of status.sandboxStatuses) s.state = 'SANDBOX_NOTREADY';
      status.ips = [];
      status.timestamp = now;
    }
    for (const pod of this.pods) {
      if (pod.id !== uid) continue;
      for (const c of pod.containers) if (c.state === 'running') c.state = 'exited';
      for (const s of pod.sandboxes) s.state = 'exited';
    }
  }
}
