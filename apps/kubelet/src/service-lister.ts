// The kubelet's cache of the cluster's Services for the service environment variables (Go:
// NewMainKubelet's Services informer: serviceLister + serviceHasSynced). A reflector lists every
// Service, then watches from the list's resourceVersion; a watch that ends or breaks resumes from the
// last resourceVersion seen (bookmarks included), a 410 Gone lists again, errors back off.
import { CoreV1Api, Watch, type KubeConfig, type V1Service, type V1Status } from '@kubernetes/client-node';
// The package's index does not re-export its ObjectSerializer (see @kubelet-ts/pod-config's serializer).
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { abortReason, Backoff, isGone, noopLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import type { ServiceSource } from '@kubelet-ts/runtime-manager';

/** A watch event as the API server sends it; object is a V1Service, or a V1Status for ERROR. */
export interface ServiceWatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: V1Service | V1Status;
}

/** The list and watch calls of the reflector (client-go's ListerWatcher); tests can fake them. */
export interface ServiceListerWatcher {
  /** Lists every Service; resourceVersion '0' lets the server answer from its watch cache. */
  list(opts: { resourceVersion: string }, signal: AbortSignal): Promise<{ services: V1Service[]; resourceVersion: string }>;
  /**
   * Watches from resourceVersion, calling onEvent for each event. Resolves when the server ends the
   * watch; rejects on a connection or HTTP error (410 = Gone) or when onEvent throws.
   */
  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: ServiceWatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** The resourceVersion watched from is too old (a watch ERROR event with code 410): list again. */
class GoneError extends Error {
  override readonly name = 'GoneError';
  readonly statusCode = 410;
}

function deserializeService(obj: unknown): V1Service {
  const service = ObjectSerializer.deserialize(obj, 'V1Service') as V1Service;
  // managedFields is most of a Service's size and nothing here reads it.
  if (service.metadata) delete service.metadata.managedFields;
  return service;
}

/** A ServiceListerWatcher over @kubernetes/client-node: /api/v1/services across all namespaces, with bookmarks. */
export function createServiceListerWatcher(kubeConfig: KubeConfig): ServiceListerWatcher {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const watcher = new Watch(kubeConfig);
  return {
    async list(opts) {
      const list = await api.listServiceForAllNamespaces(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {});
      for (const service of list.items) if (service.metadata) delete service.metadata.managedFields;
      return { services: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
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
            '/api/v1/services',
            { resourceVersion: opts.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: opts.timeoutSeconds },
            (type: string, obj: unknown) => {
              if (settled) return;
              try {
                const t = type as ServiceWatchEvent['type'];
                onEvent({ type: t, object: t === 'ERROR' ? (obj as V1Status) : deserializeService(obj) });
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

export interface ServiceListerOptions {
  /** Builds the lister/watcher when none is given. */
  kubeConfig?: KubeConfig;
  listerWatcher?: ServiceListerWatcher;
  /** Watches ask the server to end after a random time in [min, 2*min] (client-go: 5 min). */
  minWatchTimeoutMs?: number;
  /** Retry backoff after list/watch errors (client-go's reflector: 800 ms doubling to 30 s, jittered). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  backoffJitter?: number;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

/**
 * The Services of the cluster, kept current by list+watch. Hand it to the runtime manager as its
 * `services` option: it implements ServiceSource (hasSynced, list).
 */
export class ServiceLister implements ServiceSource {
  private readonly lw: ServiceListerWatcher;
  private readonly minWatchTimeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  /** namespace -> name -> service */
  private readonly store = new Map<string, Map<string, V1Service>>();
  private resourceVersion = '';
  private relistFromLatest = false;
  private listed = false;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private readonly counters = { lists: 0, watches: 0, events: 0, gone: 0, errors: 0 };

  constructor(opts: ServiceListerOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('ServiceLister needs a kubeConfig or a listerWatcher');
    this.lw = opts.listerWatcher ?? createServiceListerWatcher(opts.kubeConfig as KubeConfig);
    this.minWatchTimeoutMs = opts.minWatchTimeoutMs ?? 5 * 60_000;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? noopLogger).with({ reflector: 'services' });
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

  /** Starts listing and watching; returns at once. Aborting `signal` stops it like stop(). */
  start(signal?: AbortSignal): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    if (signal) {
      if (signal.aborted) controller.abort();
      else signal.addEventListener('abort', () => controller.abort(), { once: true });
    }
    this.loop = this.run(controller.signal);
  }

  /** Stops the reflector and closes the watch; the cache keeps what it had. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    controller.abort();
    await this.loop;
    this.controller = undefined;
  }

  /** True once the first list was stored (Go: the informer's HasSynced). */
  hasSynced(): boolean {
    return this.listed;
  }

  /** The services of a namespace; '' for every namespace. */
  list(namespace: string): V1Service[] {
    if (namespace === '') return [...this.store.values()].flatMap((byName) => [...byName.values()]);
    return [...(this.store.get(namespace)?.values() ?? [])];
  }

  get(namespace: string, name: string): V1Service | undefined {
    return this.store.get(namespace)?.get(name);
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  stats(): { lists: number; watches: number; events: number; gone: number; errors: number } {
    return { ...this.counters };
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === '') await this.relist(signal);
        if (signal.aborted) return;
        await this.watch(signal);
        // The server ended the watch (its timeout): watch again from where we are.
        this.backoff.reset('watch');
      } catch (err) {
        if (signal.aborted) return;
        if (isGone(err) || err instanceof GoneError) {
          this.counters.gone++;
          this.logger.info('Watch of services expired (410 Gone); re-listing', { resourceVersion: this.resourceVersion, err: (err as Error).message });
          this.resourceVersion = '';
          this.relistFromLatest = true;
          continue;
        }
        this.counters.errors++;
        this.backoff.next('watch');
        const delay = this.backoff.get('watch');
        this.logger.warn('List/watch of services failed; retrying', {
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

  private async relist(signal: AbortSignal): Promise<void> {
    this.counters.lists++;
    // client-go: the first list may come from the watch cache ('0'); after a 410 it asks for the latest.
    const resourceVersion = this.relistFromLatest ? '' : '0';
    const listed = await rejectOnAbort(this.lw.list({ resourceVersion }, signal), signal);
    if (signal.aborted) return;
    this.store.clear();
    for (const service of listed.services) this.put(service);
    this.resourceVersion = listed.resourceVersion;
    this.relistFromLatest = false;
    this.listed = true;
    this.logger.v(4).info('Listed services', { count: listed.services.length, resourceVersion: listed.resourceVersion });
  }

  private async watch(signal: AbortSignal): Promise<void> {
    this.counters.watches++;
    const timeoutSeconds = Math.floor((this.minWatchTimeoutMs * (1 + this.random())) / 1000);
    await this.lw.watch({ resourceVersion: this.resourceVersion, timeoutSeconds }, (event) => this.handleEvent(event, signal), signal);
  }

  /** Applies one watch event; throws to end the watch on an ERROR event. */
  private handleEvent(event: ServiceWatchEvent, signal: AbortSignal): void {
    if (signal.aborted) return;
    this.counters.events++;
    if (event.type === 'ERROR') {
      const status = event.object as V1Status;
      if (status.code === 410) throw new GoneError(status.message ?? 'too old resource version');
      throw Object.assign(new Error(`watch error event: ${status.message ?? status.reason ?? 'unknown'}`), { statusCode: status.code });
    }
    const service = event.object as V1Service;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.put(service);
        break;
      case 'DELETED':
        this.remove(service);
        break;
      case 'BOOKMARK':
        break;
      default:
        this.logger.warn('Unknown watch event type; ignoring', { type: event.type });
        return;
    }
    const rv = service.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  private put(service: V1Service): void {
    const namespace = service.metadata?.namespace ?? '';
    let byName = this.store.get(namespace);
    if (!byName) {
      byName = new Map();
      this.store.set(namespace, byName);
    }
    byName.set(service.metadata?.name ?? '', service);
  }

  private remove(service: V1Service): void {
    const namespace = service.metadata?.namespace ?? '';
    const byName = this.store.get(namespace);
    if (!byName) return;
    byName.delete(service.metadata?.name ?? '');
    if (byName.size === 0) this.store.delete(namespace);
  }
}

/** p, or a rejection with the abort reason as soon as signal aborts (a list cannot be aborted). */
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
