import { CoreV1Api, Watch, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { isGone, Backoff, PodOperation, PodSource, abortReason, noopLogger, realClock, type Clock, type Logger, type PodSourceName } from '@kubelet-ts/core';
import type { PodUpdateSink } from './config.js';
import { deserializePod } from './serializer.js';
import { abortable } from './util.js';

/** A watch event as the API server sends it; object is a V1Pod, or a V1Status for ERROR. */
export interface PodWatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: V1Pod | V1Status;
}

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

/** The resourceVersion asked for is too old (HTTP 410, or a watch ERROR event with code 410): re-list. */
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
 * fieldSelector=spec.nodeName=<node> and allowWatchBookmarks=true.
 */
export function createPodListerWatcher(kubeConfig: KubeConfig, nodeName: string): PodListerWatcher {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const watcher = new Watch(kubeConfig);
  const fieldSelector = nodeFieldSelector(nodeName);
  return {
    async list() {
      const list = await api.listPodForAllNamespaces({ fieldSelector });
      return { pods: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watch(opts, onEvent, signal) {
      return new Promise<void>((resolve, reject) => {
        let settled = false;
        let controller: AbortController | undefined;
        const finish = (err: unknown): void => {
          if (settled) return;
          settled = true;
          signal.removeEventListener('abort', onAbort);
          controller?.abort();
          if (err) reject(err);
          else resolve();
        };
        const onAbort = (): void => finish(abortReason(signal));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        watcher
          .watch(
            '/api/v1/pods',
            { fieldSelector, resourceVersion: opts.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: opts.timeoutSeconds },
            (type: string, obj: unknown) => {
              if (settled) return;
              try {
                const t = type as PodWatchEvent['type'];
                const object = t === 'ERROR' ? (obj as V1Status) : deserializePod(obj);
                onEvent({ type: t, object });
              } catch (err) {
                finish(err);
              }
            },
            (err: unknown) => finish(err ?? null),
          )
          .then(
            (c) => {
              controller = c;
              if (settled) c.abort();
            },
            (err: unknown) => finish(err),
          );
      });
    },
  };
}

export interface ApiserverSourceOptions {
  nodeName: string;
  /** Where SET snapshots go, usually podConfig.channel('api'). */
  sink: PodUpdateSink;
  /** Used to build the lister/watcher when none is given. */
  kubeConfig?: KubeConfig;
  listerWatcher?: PodListerWatcher;
  /** Go waits for the node to be registered before watching pods. Polled every nodeSyncPeriodMs (1 s). */
  nodeHasSynced?: () => boolean;
  nodeSyncPeriodMs?: number;
  /** Watches ask the server to end after a random time in [min, 2*min] (client-go: 5 min). */
  minWatchTimeoutMs?: number;
  /** Retry backoff after list/watch errors (client-go's reflector: 800 ms doubling to 30 s, jittered). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  backoffJitter?: number;
  /** Source name on the updates. Default 'api'. */
  source?: PodSourceName;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

/**
 * Go's NewSourceApiserver: a reflector (list, then watch from the list's resourceVersion) over
 * the node's pods feeding an undelta store, which sends a SET of all the node's pods whenever one
 * changes. A watch that ends or breaks is resumed from the last resourceVersion seen (bookmarks
 * included); a 410 Gone re-lists. Bursts of events are coalesced into one SET.
 */
export class ApiserverSource {
  readonly source: PodSourceName;
  private readonly nodeName: string;
  private readonly sink: PodUpdateSink;
  private readonly lw: PodListerWatcher;
  private readonly nodeHasSynced: () => boolean;
  private readonly nodeSyncPeriodMs: number;
  private readonly minWatchTimeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly store = new Map<string, V1Pod>();
  private resourceVersion = '';
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private dirty = false;
  private sending: Promise<void> | undefined;
  private listed = false;
  private readonly counters = { lists: 0, watches: 0, events: 0, bookmarks: 0, gone: 0, errors: 0, sets: 0 };

  constructor(opts: ApiserverSourceOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('ApiserverSource needs a kubeConfig or a listerWatcher');
    this.nodeName = opts.nodeName;
    this.sink = opts.sink;
    this.lw = opts.listerWatcher ?? createPodListerWatcher(opts.kubeConfig as KubeConfig, opts.nodeName);
    this.nodeHasSynced = opts.nodeHasSynced ?? (() => true);
    this.nodeSyncPeriodMs = opts.nodeSyncPeriodMs ?? 1000;
    this.minWatchTimeoutMs = opts.minWatchTimeoutMs ?? 5 * 60_000;
    this.source = opts.source ?? PodSource.API;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? noopLogger).with({ source: this.source });
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff({
      initialMs: opts.backoffInitialMs ?? 800,
      maxMs: opts.backoffMaxMs ?? 30_000,
      maxDurationMs: 2 * 60_000,
      jitter: opts.backoffJitter ?? 1.0,
      random: this.random,
      clock: this.clock,
    });
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
    await this.sending;
    this.controller = undefined;
  }

  /** True once the first list was stored. */
  hasSynced(): boolean {
    return this.listed;
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  pods(): V1Pod[] {
    return [...this.store.values()];
  }

  stats(): { lists: number; watches: number; events: number; bookmarks: number; gone: number; errors: number; sets: number } {
    return { ...this.counters };
  }

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
    this.logger.info('Watching apiserver', { node: this.nodeName });
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === '') await this.list(signal);
        await this.watch(signal);
        // The server ended the watch (its timeout): watch again from where we are.
        this.backoff.reset('watch');
      } catch (err) {
        if (signal.aborted) return;
        if (isGone(err)) {
          this.counters.gone++;
          this.logger.info('Watch of pods expired (410 Gone); re-listing', { resourceVersion: this.resourceVersion, err: (err as Error).message });
          this.resourceVersion = '';
          continue;
        }
        this.counters.errors++;
        this.backoff.next('watch');
        const delay = this.backoff.get('watch');
        this.logger.warn('List/watch of pods failed; retrying', {
          err: (err as Error)?.message ?? String(err),
          resourceVersion: this.resourceVersion,
          retryInMs: Math.round(delay),
        });
        try {
          await this.clock.sleep(delay, signal);
        } catch {
          return;
        }
      }
    }
  }

  private async list(signal: AbortSignal): Promise<void> {
    this.counters.lists++;
    // The generated client cannot abort a list; do not let stop() wait for a hung one.
    const { pods, resourceVersion } = await rejectOnAbort(this.lw.list(signal), signal);
    if (signal.aborted) return;
    this.store.clear();
    for (const pod of pods) this.store.set(storeKey(pod), pod);
    this.resourceVersion = resourceVersion;
    this.listed = true;
    this.logger.v(4).info('Listed pods', { count: pods.length, resourceVersion });
    this.sendSoon(signal);
  }

  private async watch(signal: AbortSignal): Promise<void> {
    this.counters.watches++;
    const timeoutSeconds = Math.floor((this.minWatchTimeoutMs * (1 + this.random())) / 1000);
    await this.lw.watch(
      { resourceVersion: this.resourceVersion, timeoutSeconds },
      (event) => this.handleEvent(event, signal),
      signal,
    );
  }

  /** Applies one watch event to the store; throws to end the watch on an ERROR event. */
  private handleEvent(event: PodWatchEvent, signal: AbortSignal): void {
    if (signal.aborted) return;
    this.counters.events++;
    if (event.type === 'ERROR') {
      const status = event.object as V1Status;
      if (status.code === 410) throw new GoneError(status.message ?? 'too old resource version');
      const err = new Error(`watch error event: ${status.message ?? status.reason ?? 'unknown'}`) as Error & { statusCode?: number };
      err.statusCode = status.code;
      throw err;
    }
    const pod = event.object as V1Pod;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.store.set(storeKey(pod), pod);
        this.sendSoon(signal);
        break;
      case 'DELETED':
        this.store.delete(storeKey(pod));
        this.sendSoon(signal);
        break;
      case 'BOOKMARK':
        this.counters.bookmarks++;
        break;
      default:
        this.logger.warn('Unknown watch event type; ignoring', { type: event.type });
        return;
    }
    const rv = pod.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  /** Marks the store changed; one SET goes out per burst (and again after a send that waited). */
  private sendSoon(signal: AbortSignal): void {
    this.dirty = true;
    if (this.sending) return;
    this.sending = (async () => {
      await Promise.resolve();
      while (this.dirty && !signal.aborted) {
        this.dirty = false;
        this.counters.sets++;
        await abortable(this.sink({ op: PodOperation.SET, pods: [...this.store.values()], source: this.source }), signal);
      }
      this.sending = undefined;
    })();
  }
}

/** cache.MetaNamespaceKeyFunc */
function storeKey(pod: V1Pod): string {
  const ns = pod.metadata?.namespace;
  return ns ? `${ns}/${pod.metadata?.name ?? ''}` : (pod.metadata?.name ?? '');
}

/** p, or a rejection with the abort reason as soon as signal aborts. */
function rejectOnAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
