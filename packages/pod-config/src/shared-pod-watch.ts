import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import {
  clientNodeWatch,
  defaultLogger,
  lazyApiClient,
  lazyWatch,
  metaNamespaceKey,
  PodOperation,
  PodSource,
  realClock,
  Reflector,
  type Clock,
  type Logger,
  type PodSourceName,
  type ReflectorStats,
  type ReflectorTuning,
  type StoreChange,
  type TimerHandle,
} from '@kubelet-ts/core';
import { podReflector, type ApiPodSource, type PodListerWatcher } from './apiserver-source.js';
import type { PodUpdateSink } from './config.js';
import { deserializePod } from './serializer.js';
import { abortable } from './util.js';

/** The field selector for the pods bound to any node. */
export const boundPodsFieldSelector = 'spec.nodeName!=';

/**
 * A PodListerWatcher for the pods bound to any node: /api/v1/pods with fieldSelector=spec.nodeName!=
 * (what SharedPodWatch lists and watches). client-node is loaded by the first list.
 */
export function createBoundPodsListerWatcher(kubeConfig: KubeConfig): PodListerWatcher {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  const fieldSelector = boundPodsFieldSelector;
  return {
    async list() {
      const list = await (await api()).listPodForAllNamespaces({ fieldSelector });
      return { pods: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watch: clientNodeWatch(lazyWatch(kubeConfig), '/api/v1/pods', deserializePod, { fieldSelector }),
  };
}

export interface SharedPodWatchOptions extends ReflectorTuning {
  /** Used to build the lister/watcher when none is given. */
  kubeConfig?: KubeConfig;
  /** The list/watch of the pods bound to any node (tests); default createBoundPodsListerWatcher(kubeConfig). */
  listerWatcher?: PodListerWatcher;
  /** How often the nodes still waiting for nodeHasSynced are checked, all on one timer. Default 1 s (Go). */
  nodeSyncPeriodMs?: number;
  clock?: Clock;
  logger?: Logger;
}

export interface NodePodSourceOptions {
  nodeName: string;
  /** Where the node's SET snapshots go, usually podConfig.channel('api'). */
  sink: PodUpdateSink;
  /** Go waits for the node to be registered before it watches pods; checked at start, then on the watch's shared timer. */
  nodeHasSynced?: () => boolean;
  /** Source name on the updates. Default 'api'. */
  source?: PodSourceName;
  logger?: Logger;
}

/** Counters of a SharedPodWatch: its reflector's, plus the subscribed nodes and what is indexed. */
export interface SharedPodWatchStats extends ReflectorStats {
  /** Node sources started and not stopped (waiting for their node included). */
  subscribers: number;
  /** Of those, the ones still waiting for nodeHasSynced. */
  waitingForNode: number;
  /** Nodes with at least one pod in the store. */
  nodes: number;
  /** Pods in the store bound to a node. */
  pods: number;
  /** SET snapshots sent to all node sources. */
  sets: number;
}

/**
 * One list+watch of the pods bound to any node (`/api/v1/pods?fieldSelector=spec.nodeName!=`), through
 * core's Reflector, feeding many nodes' API pod sources: what a fleet of kubelets in one process uses
 * instead of one watch per node. Each node source (nodeSource()) behaves as an ApiserverSource of its
 * node: after its nodeHasSynced() it gets a SET of exactly its pods once the store has synced (even
 * none), then one SET per burst of changes to its pods; a relist (first list, 410 Gone) sends a SET to
 * the nodes whose pods changed. The store is indexed by node, so an event costs O(1) whatever the
 * number of nodes, and the nodes still waiting for nodeHasSynced share one timer.
 */
export class SharedPodWatch {
  readonly clock: Clock;
  readonly logger: Logger;
  private readonly nodeSyncPeriodMs: number;
  private readonly reflector: Reflector<V1Pod>;
  /** node -> key (namespace/name) -> pod: the store, indexed by spec.nodeName. */
  private byNode = new Map<string, Map<string, V1Pod>>();
  /** key -> the node it was indexed under. */
  private nodeOf = new Map<string, string>();
  /** node -> its started node sources (usually one). */
  private readonly subscribers = new Map<string, Set<NodePodSource>>();
  private subscriberCount = 0;
  /** Started node sources whose nodeHasSynced() was false at the last check. */
  private readonly waiting = new Set<NodePodSource>();
  private timer: TimerHandle | undefined;
  private controller: AbortController | undefined;
  /** @internal counted by the node sources. */
  setsSent = 0;

  constructor(opts: SharedPodWatchOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('SharedPodWatch needs a kubeConfig or a listerWatcher');
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ source: 'shared-pod-watch' });
    this.nodeSyncPeriodMs = opts.nodeSyncPeriodMs ?? 1000;
    const lw = opts.listerWatcher ?? createBoundPodsListerWatcher(opts.kubeConfig as KubeConfig);
    this.reflector = podReflector(lw, opts, this.clock, this.logger, (change) => this.onStoreChange(change));
  }

  /** Starts listing and watching. Returns at once. */
  start(): void {
    if (this.controller) return;
    this.controller = new AbortController();
    this.logger.info('Watching apiserver pods bound to any node');
    this.reflector.start(this.controller.signal);
  }

  /** Stops every node source, the node check timer and the reflector (the watch is closed). */
  async stop(): Promise<void> {
    const stops: Promise<void>[] = [];
    for (const set of this.subscribers.values()) for (const s of set) stops.push(s.stop());
    await Promise.all(stops);
    this.timer?.cancel();
    this.timer = undefined;
    const controller = this.controller;
    this.controller = undefined;
    controller?.abort();
    await this.reflector.stop();
  }

  /**
   * An API pod source for one node, fed by this watch; start() subscribes it, stop() unsubscribes only
   * it. makePodSourceConfig({ sharedPodWatch }) builds one.
   */
  nodeSource(opts: NodePodSourceOptions): NodePodSource {
    return new NodePodSource(this, opts);
  }

  /** True once the first list was stored. */
  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  /** The pods bound to nodeName in the store (the objects themselves: do not modify them). */
  podsOf(nodeName: string): V1Pod[] {
    const pods = this.byNode.get(nodeName);
    return pods ? [...pods.values()] : [];
  }

  /** The reflector's counters. */
  reflectorStats(): ReflectorStats {
    return this.reflector.stats();
  }

  stats(): SharedPodWatchStats {
    return {
      ...this.reflector.stats(),
      subscribers: this.subscriberCount,
      waitingForNode: this.waiting.size,
      nodes: this.byNode.size,
      pods: this.nodeOf.size,
      sets: this.setsSent,
    };
  }

  /** @internal A node source started: active at once when its node is synced, else checked on the shared timer. */
  subscribe(s: NodePodSource): void {
    let set = this.subscribers.get(s.nodeName);
    if (!set) {
      set = new Set();
      this.subscribers.set(s.nodeName, set);
    }
    set.add(s);
    this.subscriberCount++;
    if (s.checkNode()) return;
    this.waiting.add(s);
    this.armTimer();
  }

  /** @internal */
  unsubscribe(s: NodePodSource): void {
    const set = this.subscribers.get(s.nodeName);
    if (!set?.delete(s)) return;
    this.subscriberCount--;
    if (set.size === 0) this.subscribers.delete(s.nodeName);
    this.waiting.delete(s);
    if (this.waiting.size === 0) {
      this.timer?.cancel();
      this.timer = undefined;
    }
  }

  /** One timer for every node source still waiting for its node. */
  private armTimer(): void {
    if (this.timer || this.waiting.size === 0) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      for (const s of [...this.waiting]) if (s.checkNode()) this.waiting.delete(s);
      if (this.waiting.size > 0) this.logger.v(4).info('node sync has not completed yet', { nodes: this.waiting.size });
      this.armTimer();
    }, this.nodeSyncPeriodMs);
  }

  private onStoreChange(change: StoreChange<V1Pod>): void {
    if (change.type === 'replaced') return this.replaced(change.items);
    const key = change.key;
    const oldNode = this.nodeOf.get(key);
    const newNode = change.type === 'deleted' ? undefined : change.object.spec?.nodeName || undefined;
    if (oldNode !== undefined && oldNode !== newNode) this.unindex(key, oldNode);
    if (newNode !== undefined) {
      let pods = this.byNode.get(newNode);
      if (!pods) {
        pods = new Map();
        this.byNode.set(newNode, pods);
      }
      pods.set(key, change.object);
      this.nodeOf.set(key, newNode);
    }
    if (oldNode !== undefined) this.wake(oldNode);
    if (newNode !== undefined && newNode !== oldNode) this.wake(newNode);
  }

  /** A (re)list: the index is rebuilt, and the nodes whose pods differ are woken (every node source on the first list). */
  private replaced(items: V1Pod[]): void {
    const oldNodeOf = this.nodeOf;
    const oldByNode = this.byNode;
    this.byNode = new Map();
    this.nodeOf = new Map();
    const changed = new Set<string>();
    for (const pod of items) {
      const node = pod.spec?.nodeName;
      if (!node) continue;
      const key = metaNamespaceKey(pod);
      let pods = this.byNode.get(node);
      if (!pods) {
        pods = new Map();
        this.byNode.set(node, pods);
      }
      pods.set(key, pod);
      this.nodeOf.set(key, node);
      const oldNode = oldNodeOf.get(key);
      oldNodeOf.delete(key);
      if (oldNode !== node) {
        changed.add(node);
        if (oldNode !== undefined) changed.add(oldNode);
        continue;
      }
      const old = oldByNode.get(node)?.get(key);
      const rv = pod.metadata?.resourceVersion ?? '';
      if (rv === '' || rv !== old?.metadata?.resourceVersion) changed.add(node);
    }
    for (const node of oldNodeOf.values()) changed.add(node); // pods gone
    for (const [node, set] of this.subscribers) {
      for (const s of set) if (!s.hasSent() || changed.has(node)) s.wake();
    }
  }

  private unindex(key: string, node: string): void {
    this.nodeOf.delete(key);
    const pods = this.byNode.get(node);
    if (!pods) return;
    pods.delete(key);
    if (pods.size === 0) this.byNode.delete(node);
  }

  private wake(node: string): void {
    const set = this.subscribers.get(node);
    if (set) for (const s of set) s.wake();
  }
}

/**
 * One node's API pod source on a SharedPodWatch: what ApiserverSource is for a node, without a watch
 * of its own. Build it with sharedPodWatch.nodeSource() (or makePodSourceConfig({ sharedPodWatch })).
 */
export class NodePodSource implements ApiPodSource {
  readonly source: PodSourceName;
  readonly nodeName: string;
  private readonly watch: SharedPodWatch;
  private readonly sink: PodUpdateSink;
  private readonly nodeHasSynced: () => boolean;
  private readonly logger: Logger;
  private controller: AbortController | undefined;
  /** nodeHasSynced() was seen true since start(). */
  private active = false;
  private dirty = false;
  private sent = false;
  private sending: Promise<void> | undefined;
  private sets = 0;

  constructor(watch: SharedPodWatch, opts: NodePodSourceOptions) {
    if (!opts.nodeName) throw new Error('nodeName is required');
    this.watch = watch;
    this.nodeName = opts.nodeName;
    this.sink = opts.sink;
    this.nodeHasSynced = opts.nodeHasSynced ?? (() => true);
    this.source = opts.source ?? PodSource.API;
    this.logger = opts.logger ?? watch.logger;
  }

  /** Subscribes to the shared watch; the node's SETs start after nodeHasSynced(). Returns at once. */
  start(): void {
    if (this.controller) return;
    this.controller = new AbortController();
    this.active = false;
    this.sent = false;
    this.logger.info('Waiting for node sync before watching apiserver pods', { node: this.nodeName });
    this.watch.subscribe(this);
  }

  /** Unsubscribes this node only; a SET being handed over is abandoned. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    this.watch.unsubscribe(this);
    controller.abort();
    await this.sending;
    this.controller = undefined;
    this.active = false;
  }

  /** True once the node is synced and the shared store has listed. */
  hasSynced(): boolean {
    return this.active && this.watch.hasSynced();
  }

  /** The shared watch's last resourceVersion. */
  lastSyncResourceVersion(): string {
    return this.watch.lastSyncResourceVersion();
  }

  /** The node's pods in the shared store. */
  pods(): V1Pod[] {
    return this.watch.podsOf(this.nodeName);
  }

  /** The shared reflector's counters, and the SETs this node was sent. */
  stats(): ReflectorStats & { sets: number } {
    return { ...this.watch.reflectorStats(), sets: this.sets };
  }

  /** @internal Checks nodeHasSynced(); on the first true, the node is active and gets its first SET once the store synced. */
  checkNode(): boolean {
    if (this.active) return true;
    if (!this.controller || !this.nodeHasSynced()) return false;
    this.active = true;
    this.logger.info('Watching apiserver', { node: this.nodeName });
    if (this.watch.hasSynced()) this.wake();
    return true;
  }

  /** @internal True once a SET went out since start(). */
  hasSent(): boolean {
    return this.sent;
  }

  /** @internal The node's pods changed: one SET goes out per burst (and again after a send that waited). */
  wake(): void {
    const signal = this.controller?.signal;
    if (!signal || signal.aborted || !this.active) return;
    this.dirty = true;
    if (this.sending) return;
    this.sending = (async () => {
      await Promise.resolve();
      while (this.dirty && !signal.aborted) {
        this.dirty = false;
        this.sets++;
        this.watch.setsSent++;
        this.sent = true;
        await abortable(this.sink({ op: PodOperation.SET, pods: this.watch.podsOf(this.nodeName), source: this.source }), signal);
      }
      this.sending = undefined;
    })();
  }
}
