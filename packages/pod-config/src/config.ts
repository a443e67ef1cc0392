import type { V1Pod } from '@kubernetes/client-node';
import {
  ConfigFirstSeenAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  deepEqual,
  formatRFC3339Nano,
  isMirrorPod,
  KubeletEventReason,
  noopEventRecorder,
  defaultLogger,
  podFullName,
  PodOperation,
  PodSource,
  realClock,
  type Clock,
  type EventRecorder,
  type Logger,
  type PodSourceName,
  type PodUpdate,
} from '@kubelet-ts/core';
import { UpdateQueue } from './update-queue.js';

/**
 * How changes reach the updates stream (Go's PodConfigNotificationMode).
 * - incremental: REMOVE, ADD, UPDATE, DELETE, RECONCILE (what the kubelet uses);
 * - snapshotAndUpdates: a SET of everything on additions/removals, then UPDATE and DELETE;
 * - snapshot: a SET of everything on any change.
 */
export type PodConfigMode = 'incremental' | 'snapshot' | 'snapshotAndUpdates';

/**
 * What a source hands its updates to. The merge happens synchronously, so updates are never
 * lost or reordered; the promise settles once the resulting updates fit the output buffer,
 * which is how a source waits like a Go sender on a full channel.
 */
export type PodUpdateSink = (update: PodUpdate) => Promise<void>;

export interface PodConfigOptions {
  /** Default 'incremental', as the kubelet. */
  mode?: PodConfigMode;
  clock?: Clock;
  logger?: Logger;
  /** Gets a FailedValidation warning event for each duplicate pod that is ignored. */
  recorder?: EventRecorder;
  /** Updates buffered before sources are made to wait. Default 50 (Go's channel size). */
  bufferSize?: number;
}

/** The result of comparing a stored pod with a new version of it (Go's checkAndUpdatePod). */
export interface PodChange {
  needUpdate: boolean;
  needReconcile: boolean;
  needGracefulDelete: boolean;
}

/** Annotations the kubelet adds itself; they never make a pod differ. */
const localAnnotations = [ConfigSourceAnnotationKey, ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey];

/** Go's isAnnotationMapEqual: equal except for the kubelet's local annotations. */
export function isAnnotationMapEqual(existing: Record<string, string> | undefined, candidate: Record<string, string> | undefined): boolean {
  const e = existing ?? {};
  const c = candidate ?? {};
  for (const [k, v] of Object.entries(c)) {
    if (localAnnotations.includes(k)) continue;
    if (!Object.prototype.hasOwnProperty.call(e, k) || e[k] !== v) return false;
  }
  for (const k of Object.keys(e)) {
    if (localAnnotations.includes(k)) continue;
    if (!Object.prototype.hasOwnProperty.call(c, k)) return false;
  }
  return true;
}

/** Go's podsDifferSemantically: spec, labels, deletion timestamp/grace period or non-local annotations differ. */
export function podsDifferSemantically(existing: V1Pod, ref: V1Pod): boolean {
  return !(
    deepEqual(existing.spec, ref.spec) &&
    deepEqual(existing.metadata?.labels, ref.metadata?.labels) &&
    deepEqual(existing.metadata?.deletionTimestamp, ref.metadata?.deletionTimestamp) &&
    deepEqual(existing.metadata?.deletionGracePeriodSeconds, ref.metadata?.deletionGracePeriodSeconds) &&
    isAnnotationMapEqual(existing.metadata?.annotations, ref.metadata?.annotations)
  );
}

/**
 * Go's checkAndUpdatePod: updates existing from ref (copying, ref is not kept) and says what that was:
 * a spec change (update), a change that sets deletionTimestamp (graceful delete), a status-only
 * change (reconcile), or nothing.
 */
export function checkAndUpdatePod(existing: V1Pod, ref: V1Pod): PodChange {
  const change: PodChange = { needUpdate: false, needReconcile: false, needGracefulDelete: false };
  if (!podsDifferSemantically(existing, ref)) {
    if (!deepEqual(existing.status, ref.status)) {
      existing.status = structuredClone(ref.status);
      change.needReconcile = true;
    }
    return change;
  }
  existing.metadata ??= {};
  existing.spec = structuredClone(ref.spec);
  existing.metadata.labels = structuredClone(ref.metadata?.labels);
  existing.metadata.deletionTimestamp = structuredClone(ref.metadata?.deletionTimestamp);
  existing.metadata.deletionGracePeriodSeconds = ref.metadata?.deletionGracePeriodSeconds;
  existing.status = structuredClone(ref.status);
  // updateAnnotations: ref's annotations plus our local ones (first-seen time, source, mirror) kept.
  const annotations: Record<string, string> = { ...(ref.metadata?.annotations ?? {}) };
  for (const k of localAnnotations) {
    const v = existing.metadata.annotations?.[k];
    if (v !== undefined) annotations[k] = v;
    else delete annotations[k];
  }
  existing.metadata.annotations = annotations;
  if (ref.metadata?.deletionTimestamp) change.needGracefulDelete = true;
  else change.needUpdate = true;
  return change;
}

interface StoredPod {
  pod: V1Pod;
  source: PodSourceName;
  uid: string;
  fullName: string;
  /** Order first seen, across sources: the earliest pod of a full name wins. */
  seq: number;
  /** Hidden behind an earlier pod of the same full name from another source (or an earlier UID). */
  shadowed: boolean;
  /** metadata.resourceVersion of the last update merged (API server pods; '' from files and URLs). */
  resourceVersion: string;
}

interface MergeResult {
  adds: StoredPod[];
  updates: StoredPod[];
  deletes: StoredPod[];
  removes: StoredPod[];
  reconciles: StoredPod[];
  /** Shadowed pods that became visible because the pod hiding them went away. */
  promoted: StoredPod[];
}

/** Counters for monitoring and tests. */
export interface PodConfigStats {
  /** Updates merged from sources. */
  merged: number;
  /** PodUpdates delivered to the output buffer. */
  emitted: number;
  /** Pods ignored because another pod of the same full name came first. */
  duplicates: number;
  /** Updates waiting in the output buffer. */
  buffered: number;
}

/**
 * Merges pod configuration from many sources into one ordered stream of PodUpdates (Go's PodConfig
 * and podStorage). Each source gets a sink from channel(); its updates (SET snapshots or
 * ADD/UPDATE/DELETE/REMOVE deltas) are merged against that source's pods and turned into minimal
 * updates, delivered in order on updates().
 *
 * Across sources, pods are told apart by full name (name_namespace): the first pod seen with a
 * name wins, a later one from another source is reported (log and FailedValidation event) and kept
 * hidden until the first goes away. Mirror pods (the API server's copies of static pods) are exempt.
 */
export class PodConfig {
  readonly mode: PodConfigMode;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly queue: UpdateQueue<PodUpdate>;
  /** source -> uid -> pod */
  private readonly storage = new Map<PodSourceName, Map<string, StoredPod>>();
  /** full name -> the visible pod with that name (mirror pods excluded). */
  private readonly owners = new Map<string, StoredPod>();
  /** Every source that asked for a channel. */
  private readonly sources = new Set<PodSourceName>();
  /** Sources that delivered at least one SET. */
  private readonly sourcesSeen = new Set<PodSourceName>();
  private seq = 0;
  private readonly counters = { merged: 0, emitted: 0, duplicates: 0 };

  constructor(opts: PodConfigOptions = {}) {
    this.mode = opts.mode ?? 'incremental';
    if (!['incremental', 'snapshot', 'snapshotAndUpdates'].includes(this.mode)) {
      throw new Error(`unsupported PodConfigNotificationMode: ${JSON.stringify(this.mode)}`);
    }
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.queue = new UpdateQueue(opts.bufferSize ?? 50);
  }

  /**
   * Registers source (sourcesReady() waits for it) and returns the sink its updates go to. The
   * update's own `source` field is ignored: the channel names the source, as in Go's mux.
   */
  channel(source: PodSourceName): PodUpdateSink {
    this.sources.add(source);
    return (update) => this.merge(source, update);
  }

  /** The configured sources (those that asked for a channel). */
  configuredSources(): PodSourceName[] {
    return [...this.sources];
  }

  /**
   * Merges one update from source and queues what changed. Synchronous: the state is updated
   * before this returns; the promise only paces the caller (see PodUpdateSink).
   */
  merge(source: PodSourceName, update: PodUpdate): Promise<void> {
    if (this.queue.isClosed) return Promise.resolve();
    this.counters.merged++;
    const seenBefore = this.sourcesSeen.has(source);
    const r = this.mergeInto(source, update);
    const firstSet = !seenBefore && this.sourcesSeen.has(source);
    const visible = (list: StoredPod[]): V1Pod[] => list.filter((p) => !p.shadowed).map((p) => structuredClone(p.pod));
    const adds = visible(r.adds);
    const updates = visible(r.updates);
    const deletes = visible(r.deletes);
    const removes = r.removes.map((p) => structuredClone(p.pod)); // already filtered: only pods that were visible
    const reconciles = visible(r.reconciles);
    const out: PodUpdate[] = [];
    const emit = (op: PodOperation, pods: V1Pod[], src: PodSourceName = source): void => {
      out.push({ op, pods, source: src });
    };
    const promotedBySource = (): Map<PodSourceName, V1Pod[]> => {
      const m = new Map<PodSourceName, V1Pod[]>();
      for (const p of r.promoted) {
        const list = m.get(p.source) ?? [];
        list.push(structuredClone(p.pod));
        m.set(p.source, list);
      }
      return m;
    };
    switch (this.mode) {
      case 'incremental':
        // REMOVE first: a static pod whose manifest changed comes back with a new UID under the
        // same full name, and the consumer must drop the old one before it sees the new.
        if (removes.length > 0) emit(PodOperation.REMOVE, removes);
        if (adds.length > 0) emit(PodOperation.ADD, adds);
        if (updates.length > 0) emit(PodOperation.UPDATE, updates);
        if (deletes.length > 0) emit(PodOperation.DELETE, deletes);
        if (firstSet && adds.length === 0 && updates.length === 0 && deletes.length === 0) {
          // An empty ADD tells the consumer the source is ready.
          emit(PodOperation.ADD, []);
        }
        if (reconciles.length > 0) emit(PodOperation.RECONCILE, reconciles);
        for (const [src, pods] of promotedBySource()) emit(PodOperation.ADD, pods, src);
        break;
      case 'snapshotAndUpdates':
        if (removes.length > 0 || adds.length > 0 || firstSet || r.promoted.length > 0) emit(PodOperation.SET, this.pods());
        if (updates.length > 0) emit(PodOperation.UPDATE, updates);
        if (deletes.length > 0) emit(PodOperation.DELETE, deletes);
        break;
      case 'snapshot':
        if (updates.length > 0 || deletes.length > 0 || adds.length > 0 || removes.length > 0 || firstSet || r.promoted.length > 0) {
          emit(PodOperation.SET, this.pods());
        }
        break;
    }
    let last: Promise<void> = Promise.resolve();
    for (const u of out) {
      this.counters.emitted++;
      last = this.queue.push(u);
    }
    return last;
  }

  /** Go's podStorage.merge plus the cross-source full-name bookkeeping. */
  private mergeInto(source: PodSourceName, update: PodUpdate): MergeResult {
    const r: MergeResult = { adds: [], updates: [], deletes: [], removes: [], reconciles: [], promoted: [] };
    let pods = this.storage.get(source) ?? new Map<string, StoredPod>();
    const removedAll: StoredPod[] = [];

    const updatePods = (newPods: V1Pod[], oldPods: Map<string, StoredPod>, target: Map<string, StoredPod>): void => {
      for (const ref of this.filterDuplicateNames(newPods, source)) {
        const uid = podKey(ref);
        const existing = oldPods.get(uid);
        if (existing) {
          target.set(uid, existing);
          // The API server changes an object's resourceVersion with every write: the same one is the same pod.
          // The API source sends its whole store on each change, so this spares comparing every unchanged pod.
          const resourceVersion = ref.metadata?.resourceVersion ?? '';
          if (resourceVersion !== '' && resourceVersion === existing.resourceVersion) continue;
          existing.resourceVersion = resourceVersion;
          const refWithSource = withAnnotation(ref, ConfigSourceAnnotationKey, source);
          const change = checkAndUpdatePod(existing.pod, refWithSource);
          if (change.needUpdate) r.updates.push(existing);
          else if (change.needReconcile) r.reconciles.push(existing);
          else if (change.needGracefulDelete) r.deletes.push(existing);
          continue;
        }
        const pod = structuredClone(ref);
        pod.metadata ??= {};
        pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [ConfigSourceAnnotationKey]: source };
        // recordFirstSeenTime
        pod.metadata.annotations[ConfigFirstSeenAnnotationKey] = formatRFC3339Nano(this.clock.now());
        const stored: StoredPod = { pod, source, uid, fullName: podFullName(pod), seq: this.seq++, shadowed: false, resourceVersion: ref.metadata?.resourceVersion ?? '' };
        target.set(uid, stored);
        r.adds.push(stored);
      }
    };

    switch (update.op) {
      case PodOperation.ADD:
      case PodOperation.UPDATE:
      case PodOperation.DELETE: {
        const verb = update.op === PodOperation.ADD ? 'Adding new pods from source' : update.op === PodOperation.DELETE ? 'Gracefully deleting pods from source' : 'Updating pods from source';
        this.logger.v(4).info(verb, { source, pods: update.pods.map(podRefText) });
        updatePods(update.pods, pods, pods);
        break;
      }
      case PodOperation.REMOVE:
        this.logger.v(4).info('Removing pods from source', { source, pods: update.pods.map(podRefText) });
        for (const value of update.pods) {
          const uid = podKey(value);
          const existing = pods.get(uid);
          if (existing) {
            pods.delete(uid);
            removedAll.push(existing);
          }
        }
        break;
      case PodOperation.SET: {
        this.logger.v(4).info('Setting pods for source', { source });
        this.sourcesSeen.add(source);
        const oldPods = pods;
        pods = new Map();
        updatePods(update.pods, oldPods, pods);
        for (const [uid, existing] of oldPods) if (!pods.has(uid)) removedAll.push(existing);
        break;
      }
      default:
        this.logger.info('Received invalid update type', { type: update.op, source });
    }
    this.storage.set(source, pods);
    this.resolveNames(source, r, removedAll);
    return r;
  }

  /**
   * Keeps one visible pod per full name: removals free names (a visible removed pod is reported as
   * REMOVE), additions take free names or are shadowed, and freed names still free afterwards
   * go to the earliest-seen shadowed pod of that name.
   */
  private resolveNames(source: PodSourceName, r: MergeResult, removedAll: StoredPod[]): void {
    const freed = new Set<string>();
    for (const p of removedAll) {
      if (p.shadowed) continue; // never shown, nothing to remove downstream
      r.removes.push(p);
      if (this.owners.get(p.fullName) === p) {
        this.owners.delete(p.fullName);
        freed.add(p.fullName);
      }
    }
    for (const p of r.adds) {
      if (isMirrorPod(p.pod)) continue;
      const owner = this.owners.get(p.fullName);
      if (!owner) {
        this.owners.set(p.fullName, p);
        continue;
      }
      p.shadowed = true;
      this.counters.duplicates++;
      const message = `Error validating pod ${podRefText(p.pod)} from ${source} due to duplicate pod name ${JSON.stringify(p.pod.metadata?.name ?? '')}, ignoring`;
      this.logger.warn('Pod has the same full name as a pod seen first; ignoring it while that pod exists', {
        pod: podRefText(p.pod),
        source,
        uid: p.uid,
        firstSource: owner.source,
        firstUID: owner.uid,
      });
      this.recorder.event(p.pod, 'Warning', KubeletEventReason.FailedValidation, message);
    }
    for (const name of freed) {
      if (this.owners.has(name)) continue;
      let best: StoredPod | undefined;
      for (const pods of this.storage.values()) {
        for (const p of pods.values()) {
          if (p.shadowed && p.fullName === name && (!best || p.seq < best.seq)) best = p;
        }
      }
      if (best) {
        best.shadowed = false;
        this.owners.set(name, best);
        if (best.source === source && r.adds.includes(best)) continue; // already reported as an ADD of this merge
        r.promoted.push(best);
        this.logger.info('Pod is no longer hidden by a pod of the same full name', { pod: podRefText(best.pod), source: best.source });
      }
    }
  }

  /** Go's filterInvalidPods: within one update, the first pod of a full name wins. */
  private filterDuplicateNames(pods: V1Pod[], source: PodSourceName): V1Pod[] {
    const names = new Set<string>();
    const filtered: V1Pod[] = [];
    pods.forEach((pod, i) => {
      const name = podFullName(pod);
      if (names.has(name)) {
        this.counters.duplicates++;
        this.logger.warn('Pod failed validation due to duplicate pod name, ignoring', { index: i, pod: podRefText(pod), source });
        this.recorder.event(
          pod,
          'Warning',
          KubeletEventReason.FailedValidation,
          `Error validating pod ${podRefText(pod)} from ${source} due to duplicate pod name ${JSON.stringify(pod.metadata?.name ?? '')}, ignoring`,
        );
        return;
      }
      names.add(name);
      filtered.push(pod);
    });
    return filtered;
  }

  /**
   * The stream of merged updates. One consumer at a time; iteration ends after close() once the
   * buffered updates are consumed. Breaking out of a for-await releases it for another consumer.
   */
  updates(): AsyncIterable<PodUpdate> {
    return this.queue;
  }

  /** Takes the next buffered update without waiting (undefined when none). */
  tryNext(): PodUpdate | undefined {
    return this.queue.tryShift();
  }

  /** Go's Sync: queues a SET of every visible pod with source '*'. */
  sync(): Promise<void> {
    this.counters.emitted++;
    return this.queue.push({ op: PodOperation.SET, pods: this.pods(), source: PodSource.All });
  }

  /** The merged state: deep copies of every visible pod, by source in the order first seen. */
  pods(): V1Pod[] {
    const out: V1Pod[] = [];
    for (const pods of this.storage.values()) for (const p of pods.values()) if (!p.shadowed) out.push(structuredClone(p.pod));
    return out;
  }

  /** The visible pods of one source (copies). */
  podsFromSource(source: PodSourceName): V1Pod[] {
    return [...(this.storage.get(source)?.values() ?? [])].filter((p) => !p.shadowed).map((p) => structuredClone(p.pod));
  }

  /** True once every configured source has delivered its first state (a SET). */
  sourcesReady(): boolean {
    for (const s of this.sources) if (!this.sourcesSeen.has(s)) return false;
    return true;
  }

  /**
   * Go's SeenAllSources: seenSources (what the consumer has processed) holds every configured
   * source, and each of them delivered a SET.
   */
  seenAllSources(seenSources: Iterable<PodSourceName>): boolean {
    const seen = new Set(seenSources);
    this.logger.v(5).info('Looking for sources, have seen', { sources: [...this.sources], seenSources: [...seen] });
    for (const s of this.sources) if (!seen.has(s)) return false;
    return this.sourcesReady();
  }

  stats(): PodConfigStats {
    return { ...this.counters, buffered: this.queue.length };
  }

  /** Stops accepting updates and ends the updates stream once drained; waiting sources are released. */
  close(): void {
    this.queue.close();
  }
}

/** Pods are keyed by UID, as in Go; a pod without one (only hand-made test pods) falls back to its full name. */
function podKey(pod: V1Pod): string {
  return pod.metadata?.uid || `fullname:${podFullName(pod)}`;
}

function withAnnotation(pod: V1Pod, key: string, value: string): V1Pod {
  return { ...pod, metadata: { ...(pod.metadata ?? {}), annotations: { ...(pod.metadata?.annotations ?? {}), [key]: value } } };
}

/** klog.KObj: namespace/name. */
export function podRefText(pod: V1Pod): string {
  const ns = pod.metadata?.namespace;
  return ns ? `${ns}/${pod.metadata?.name ?? ''}` : (pod.metadata?.name ?? '');
}
