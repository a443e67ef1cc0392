// Test doubles for the pod workers, published as `@kubelet-ts/pod-workers/testing`.
import type { V1Pod } from '@kubernetes/client-node';
import { abortReason, type PodCache, type PodStatus, type RuntimePod } from '@kubelet-ts/core';
import type { PodStatusFunc, PodSyncer, PodWorkers, PodWorkerSync, SyncPodType, UpdatePodOptions } from './types.js';

export type SyncerMethod = 'syncPod' | 'syncTerminatingPod' | 'syncTerminatingRuntimePod' | 'syncTerminatedPod';

export interface RecordedSync {
  method: SyncerMethod;
  uid: string;
  /** When the call started (the clock given to the syncer, else Date.now()). */
  at: number;
  updateType?: SyncPodType;
  pod?: V1Pod;
  mirrorPod?: V1Pod;
  runningPod?: RuntimePod;
  podStatus?: PodStatus;
  gracePeriodSeconds?: number;
  podStatusFn?: PodStatusFunc;
  /** Set once the call returned: 'ok', 'error' or 'aborted'. */
  outcome?: 'ok' | 'error' | 'aborted';
}

interface Gate {
  promise: Promise<void>;
  release(): void;
}

/**
 * A PodSyncer that records every call. Per method it can fail the next calls (failNext), answer
 * syncPod's isTerminal (terminal), and hold calls until released (hold) so a test can act while a
 * sync is in flight; a held call rejects with an AbortError when its signal aborts.
 */
export class RecordingPodSyncer implements PodSyncer {
  readonly calls: RecordedSync[] = [];
  /** uid -> what syncPod answers (isTerminal); default false. */
  readonly terminal = new Map<string, boolean>();
  private readonly failures = new Map<SyncerMethod, Error[]>();
  private readonly gates = new Map<SyncerMethod, Gate>();
  private readonly now: () => number;

  constructor(opts: { clock?: { now(): number } } = {}) {
    const clock = opts.clock;
    this.now = clock ? () => clock.now() : Date.now;
  }

  /** The next call(s) of method reject with error, one each. */
  failNext(method: SyncerMethod, error: Error = new Error(`${method} failed`), times = 1): void {
    const list = this.failures.get(method) ?? [];
    for (let i = 0; i < times; i++) list.push(error);
    this.failures.set(method, list);
  }

  /** Calls of method wait until the returned release() is called (or their signal aborts). */
  hold(method: SyncerMethod): () => void {
    let release!: () => void;
    const promise = new Promise<void>((resolve) => (release = resolve));
    const gate = {
      promise,
      release: () => {
        if (this.gates.get(method) === gate) this.gates.delete(method);
        release();
      },
    };
    this.gates.set(method, gate);
    return gate.release;
  }

  /** Calls of one method (and optionally one pod). */
  callsOf(method: SyncerMethod, uid?: string): RecordedSync[] {
    return this.calls.filter((c) => c.method === method && (uid === undefined || c.uid === uid));
  }

  /** The method names called, in order, optionally for one pod. */
  methods(uid?: string): SyncerMethod[] {
    return this.calls.filter((c) => uid === undefined || c.uid === uid).map((c) => c.method);
  }

  async syncPod(updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, podStatus: PodStatus, signal: AbortSignal): Promise<boolean> {
    const call: RecordedSync = { method: 'syncPod', uid: pod.metadata?.uid ?? '', at: this.now(), updateType, pod, mirrorPod, podStatus };
    await this.run(call, signal);
    return this.terminal.get(call.uid) ?? false;
  }

  async syncTerminatingPod(
    pod: V1Pod,
    podStatus: PodStatus,
    gracePeriodSeconds: number | undefined,
    podStatusFn: PodStatusFunc | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    await this.run({ method: 'syncTerminatingPod', uid: pod.metadata?.uid ?? '', at: this.now(), pod, podStatus, gracePeriodSeconds, podStatusFn }, signal);
  }

  async syncTerminatingRuntimePod(runningPod: RuntimePod, signal: AbortSignal): Promise<void> {
    await this.run({ method: 'syncTerminatingRuntimePod', uid: runningPod.id, at: this.now(), runningPod }, signal);
  }

  async syncTerminatedPod(pod: V1Pod, podStatus: PodStatus, signal: AbortSignal): Promise<void> {
    await this.run({ method: 'syncTerminatedPod', uid: pod.metadata?.uid ?? '', at: this.now(), pod, podStatus }, signal);
  }

  private async run(call: RecordedSync, signal: AbortSignal): Promise<void> {
    this.calls.push(call);
    try {
      const gate = this.gates.get(call.method);
      if (gate) await waitOrAbort(gate.promise, signal);
      const failure = this.failures.get(call.method)?.shift();
      if (failure) throw failure;
      call.outcome = 'ok';
    } catch (err) {
      call.outcome = signal.aborted ? 'aborted' : 'error';
      throw err;
    }
  }
}

function waitOrAbort(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, reject);
  });
}

/**
 * PodWorkers for the kubelet's own tests (Go: fakePodWorkers): records every update; a kill is
 * recorded as a triggered deletion, any other update calls the syncer's syncPod (if a syncer is
 * given) with the cached status, and a terminal answer is recorded. The query methods answer from
 * the sets a test fills.
 */
export class FakePodWorkers implements PodWorkers {
  readonly updates: UpdatePodOptions[] = [];
  readonly triggeredDeletion: string[] = [];
  readonly triggeredTerminal: string[] = [];
  readonly syncErrors: unknown[] = [];
  readonly running = new Set<string>();
  readonly terminating = new Set<string>();
  readonly terminated = new Set<string>();
  readonly terminationRequested = new Set<string>();
  readonly finished = new Set<string>();
  readonly removeRuntime = new Set<string>();
  readonly removeContent = new Set<string>();
  readonly terminatingStaticPods = new Set<string>();
  /** What syncKnownPods answers; default: every desired pod in state 'sync'. */
  knownPods: ((desired: V1Pod[]) => Map<string, PodWorkerSync>) | undefined;
  readonly syncKnownPodsCalls: V1Pod[][] = [];
  private readonly pending: Promise<void>[] = [];

  constructor(private readonly opts: { syncer?: Pick<PodSyncer, 'syncPod'>; cache?: PodCache } = {}) {}

  updatePod(options: UpdatePodOptions): void {
    this.updates.push(options);
    const uid = options.pod?.metadata?.uid ?? options.runningPod?.id;
    if (uid === undefined) return;
    if (options.updateType === 'kill') {
      this.triggeredDeletion.push(uid);
      return;
    }
    const syncer = this.opts.syncer;
    if (!syncer || !options.pod) return;
    const status = this.opts.cache?.get(uid).status ?? { id: uid, name: '', namespace: '', ips: [], containerStatuses: [], sandboxStatuses: [], timestamp: 0 };
    const run = syncer
      .syncPod(options.updateType, options.pod, options.mirrorPod, status, new AbortController().signal)
      .then((isTerminal) => {
        if (isTerminal) this.triggeredTerminal.push(uid);
      })
      .catch((err) => {
        this.syncErrors.push(err);
      });
    this.pending.push(run);
  }

  /** Resolves once every syncPod started by updatePod has returned. */
  async settle(): Promise<void> {
    while (this.pending.length > 0) await Promise.all(this.pending.splice(0));
  }

  syncKnownPods(desiredPods: V1Pod[]): Map<string, PodWorkerSync> {
    this.syncKnownPodsCalls.push(desiredPods);
    if (this.knownPods) return this.knownPods(desiredPods);
    return new Map(desiredPods.map((pod) => [pod.metadata?.uid ?? '', { state: 'sync', orphan: false, hasConfig: true, static: false }]));
  }

  isPodKnownTerminated(uid: string): boolean {
    return this.terminated.has(uid);
  }

  couldHaveRunningContainers(uid: string): boolean {
    return this.running.has(uid);
  }

  shouldPodBeFinished(uid: string): boolean {
    return this.finished.has(uid);
  }

  isPodTerminationRequested(uid: string): boolean {
    return this.terminationRequested.has(uid);
  }

  shouldPodContainersBeTerminating(uid: string): boolean {
    return this.terminating.has(uid);
  }

  shouldPodRuntimeBeRemoved(uid: string): boolean {
    return this.removeRuntime.has(uid);
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    return this.removeContent.has(uid);
  }

  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean {
    return this.terminatingStaticPods.has(podFullName);
  }
}
