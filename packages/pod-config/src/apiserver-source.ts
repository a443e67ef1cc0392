import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { clientNodeWatch, lazyApiClient, lazyWatch, type ReflectorStats, PodOperation, PodSource, Reflector, defaultLogger, realClock, type Clock, type Logger, type PodSourceName, type ReflectorTuning, type StoreChange, type WatchEvent } from '@kubelet-ts/core';
import type { PodUpdateSink } from './config.js';
import { deserializePod } from './serializer.js';
import { abortable } from './util.js';

/** A watch event as the API server sends it; object is a V1Pod, or a V1Status for ERROR. */
export type PodWatchEvent = WatchEvent<V1Pod>;

/**
 * The list and watch calls the API server source makes (client-go's ListerWatcher), narrowed to the
 * pods of one node. createPodListerWatcher() talks to a real API server; tests can fake it.
 */
export interface PodListerWatcher {
  /** Lists the pods; resourceVersion is the list's, to watch from. */
  list(signal: AbortSignal): Promise<{ pods: V1Pod[]; resourceVersion: string }>;
  /**
   * Watches from resourceVersion, calling onEvent for each event. Resolves when the server ends the
   * watch (timeout); rejects on a connection error, an HTTP error (statusCode set, 410 = Gone), or
   * when onEvent throws (the watch is then closed).
   */
  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: PodWatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** The resourceVersion asked for is too old (HTTP 410): a PodListerWatcher may reject with it to have the source re-list. */
export class GoneError extends Error {
  override readonly name = 'GoneError';
  readonly statusCode = 410;
  constructor(message = 'too old resource version') {
    super(message);
  }
}

/** The field selector for the pods bound to a node. */
export function nodeFieldSelector(nodeName: string): string {
  return `spec.nodeName=${nodeName}`;
}

/**
 * A PodListerWatcher over @kubernetes/client-node: CoreV1Api.listPodForAllNamespaces for the list
 * and its Watch (the wire-level watch under its informer) on /api/v1/pods with
 * fieldSelector=spec.nodeName=<node> and allowWatchBookmarks=true. client-node is loaded by the first list.
 */
export function createPodListerWatcher(kubeConfig: KubeConfig, nodeName: string): PodListerWatcher {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  const fieldSelector = nodeFieldSelector(nodeName);
  return {
    async list() {
      const list = await (await api()).listPodForAllNamespaces({ fieldSelector });
      return { pods: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watch: clientNodeWatch(lazyWatch(kubeConfig), '/api/v1/pods', deserializePod, { fieldSelector }),
  };
}

/**
 * core's Reflector over a PodListerWatcher, as the API server sources (one node's, or the fleet's shared one) keep
 * their store: the pod list always asks for the latest state (no resourceVersion).
 */
export function podReflector(lw: PodListerWatcher, tuning: ReflectorTuning, clock: Clock, logger: Logger, onChange: (change: StoreChange<V1Pod>) => void): Reflector<V1Pod> {
  return new Reflector<V1Pod>({
    description: 'pods',
    listerWatcher: {
      async list(_listOpts, signal) {
        const { pods, resourceVersion } = await lw.list(signal);
        return { items: pods, resourceVersion };
      },
      watch: (watchOpts, onEvent, signal) => lw.watch(watchOpts, onEvent, signal),
    },
    minWatchTimeoutMs: tuning.minWatchTimeoutMs,
    backoffInitialMs: tuning.backoffInitialMs,
    backoffMaxMs: tuning.backoffMaxMs,
    backoffJitter: tuning.backoffJitter,
    clock,
    logger,
    random: tuning.random,
    onChange,
  });
}

export interface ApiserverSourceOptions extends ReflectorTuning {
  nodeName: string;
  /** Where SET snapshots go, usually podConfig.channel('api'). */
  sink: PodUpdateSink;
  /** Used to build the lister/watcher when none is given. */
  kubeConfig?: KubeConfig;
  listerWatcher?: PodListerWatcher;
  /** Go waits for the node to be registered before watching pods. Polled every nodeSyncPeriodMs (1 s). */
  nodeHasSynced?: () => boolean;
  nodeSyncPeriodMs?: number;
  /** Source name on the updates. Default 'api'. */
  source?: PodSourceName;
  clock?: Clock;
  logger?: Logger;
}

/**
 * A node's API server pod source as makePodSourceConfig returns it (`api`): an ApiserverSource (a watch
 * of its own) or a SharedPodWatch's NodePodSource.
 */
export interface ApiPodSource {
  readonly source: PodSourceName;
  /** Starts (after nodeHasSynced); returns at once. */
  start(): void;
  /** Stops this source; nothing of it is left behind. */
  stop(): Promise<void>;
  /** True once the node's pods were listed. */
  hasSynced(): boolean;
  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string;
  /** The node's pods. */
  pods(): V1Pod[];
  /** The reflector's counters and the SETs this source sent. */
  stats(): ReflectorStats & { sets: number };
}

/**
 * Go's NewSourceApiserver: core's Reflector (list, then watch from the list's resourceVersion) over
 * the node's pods feeding an undelta store, which sends a SET of all the node's pods whenever one
 * changes. A watch that ends or breaks is resumed from the last resourceVersion seen (bookmarks
 * included); a 410 Gone re-lists. Bursts of events are coalesced into one SET.
 */
export class ApiserverSource implements ApiPodSource {
  readonly source: PodSourceName;
  private readonly nodeName: string;
  private readonly sink: PodUpdateSink;
  private readonly nodeHasSynced: () => boolean;
  private readonly nodeSyncPeriodMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly reflector: Reflector<V1Pod>;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private dirty = false;
  private sending: Promise<void> | undefined;
  private sets = 0;

  constructor(opts: ApiserverSourceOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('ApiserverSource needs a kubeConfig or a listerWatcher');
    this.nodeName = opts.nodeName;
    this.sink = opts.sink;
    this.nodeHasSynced = opts.nodeHasSynced ?? (() => true);
    this.nodeSyncPeriodMs = opts.nodeSyncPeriodMs ?? 1000;
    this.source = opts.source ?? PodSource.API;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ source: this.source });
    const lw = opts.listerWatcher ?? createPodListerWatcher(opts.kubeConfig as KubeConfig, opts.nodeName);
    this.reflector = podReflector(lw, opts, this.clock, this.logger, () => this.sendSoon());
  }

  /** Starts (after nodeHasSynced) listing and watching. Returns at once. */
  start(): void {
    if (this.controller) return;
    this.controller = new AbortController();
    this.loop = this.run(this.controller.signal);
  }

  /** Stops the reflector and closes the watch. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    controller.abort();
    await this.loop;
    await this.reflector.stop();
    await this.sending;
    this.controller = undefined;
  }

  /** True once the first list was stored. */
  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  pods(): V1Pod[] {
    return this.reflector.list();
  }

  stats(): ReflectorStats & { sets: number } {
    return { ...this.reflector.stats(), sets: this.sets };
  }

  /** Waits for the node to be registered, then hands over to the reflector. */
  private async run(signal: AbortSignal): Promise<void> {
    this.logger.info('Waiting for node sync before watching apiserver pods');
    while (!this.nodeHasSynced()) {
      try {
        await this.clock.sleep(this.nodeSyncPeriodMs, signal);
      } catch {
        return;
      }
      this.logger.v(4).info('node sync has not completed yet');
    }
    if (signal.aborted) return;
    this.logger.info('Watching apiserver', { node: this.nodeName });
    this.reflector.start(signal);
  }

  /** Marks the store changed; one SET goes out per burst (and again after a send that waited). */
  private sendSoon(): void {
    const signal = this.controller?.signal;
    if (!signal || signal.aborted) return;
    this.dirty = true;
    if (this.sending) return;
    this.sending = (async () => {
      await Promise.resolve();
      while (this.dirty && !signal.aborted) {
        this.dirty = false;
        this.sets++;
        await abortable(this.sink({ op: PodOperation.SET, pods: this.reflector.list(), source: this.source }), signal);
      }
      this.sending = undefined;
    })();
  }
}
