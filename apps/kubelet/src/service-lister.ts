// The kubelet's cache of the cluster's Services for the service environment variables (Go:
// NewMainKubelet's Services informer: serviceLister + serviceHasSynced). core's Reflector lists every
// Service, then watches from the list's resourceVersion; a watch that ends or breaks resumes from the
// last resourceVersion seen (bookmarks included), a 410 Gone lists again, errors back off.
import type { KubeConfig, V1Service } from '@kubernetes/client-node';
import { clientNodeWatch, deserializeApiObject, lazyApiClient, lazyWatch, Reflector, type Clock, type Logger, type ReflectorTuning, type WatchEvent } from '@kubelet-ts/core';
import type { ServiceSource } from '@kubelet-ts/runtime-manager';

/** A watch event as the API server sends it; object is a V1Service, or a V1Status for ERROR. */
export type ServiceWatchEvent = WatchEvent<V1Service>;

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

function deserializeService(obj: unknown): V1Service {
  const service = deserializeApiObject(obj, 'V1Service');
  // managedFields is most of a Service's size and nothing here reads it.
  if (service.metadata) delete service.metadata.managedFields;
  return service;
}

/** A ServiceListerWatcher over @kubernetes/client-node: /api/v1/services across all namespaces, with bookmarks. */
export function createServiceListerWatcher(kubeConfig: KubeConfig): ServiceListerWatcher {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  return {
    async list(opts) {
      const list = await (await api()).listServiceForAllNamespaces(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {});
      for (const service of list.items) if (service.metadata) delete service.metadata.managedFields;
      return { services: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watch: clientNodeWatch(lazyWatch(kubeConfig), '/api/v1/services', deserializeService),
  };
}

export interface ServiceListerOptions extends ReflectorTuning {
  /** Builds the lister/watcher when none is given. */
  kubeConfig?: KubeConfig;
  listerWatcher?: ServiceListerWatcher;
  clock?: Clock;
  logger?: Logger;
}

/**
 * The Services of the cluster, kept current by list+watch. Hand it to the runtime manager as its
 * `services` option: it implements ServiceSource (hasSynced, list).
 */
export class ServiceLister implements ServiceSource {
  private readonly reflector: Reflector<V1Service>;

  constructor(opts: ServiceListerOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('ServiceLister needs a kubeConfig or a listerWatcher');
    const lw = opts.listerWatcher ?? createServiceListerWatcher(opts.kubeConfig as KubeConfig);
    this.reflector = new Reflector<V1Service>({
      description: 'services',
      listerWatcher: {
        async list(listOpts, signal) {
          const { services, resourceVersion } = await lw.list(listOpts, signal);
          return { items: services, resourceVersion };
        },
        watch: (watchOpts, onEvent, signal) => lw.watch(watchOpts, onEvent, signal),
      },
      minWatchTimeoutMs: opts.minWatchTimeoutMs,
      backoffInitialMs: opts.backoffInitialMs,
      backoffMaxMs: opts.backoffMaxMs,
      backoffJitter: opts.backoffJitter,
      clock: opts.clock,
      logger: opts.logger,
      random: opts.random,
    });
  }

  /** Starts listing and watching; returns at once. Aborting `signal` stops it like stop(). */
  start(signal?: AbortSignal): void {
    this.reflector.start(signal);
  }

  /** Stops the reflector and closes the watch; the cache keeps what it had. */
  stop(): Promise<void> {
    return this.reflector.stop();
  }

  /** True once the first list was stored (Go: the informer's HasSynced). */
  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** The services of a namespace; '' for every namespace. */
  list(namespace: string): V1Service[] {
    return this.reflector.list(namespace);
  }

  get(namespace: string, name: string): V1Service | undefined {
    return this.reflector.get(namespace, name);
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  stats(): { lists: number; watches: number; events: number; gone: number; errors: number } {
    const { lists, watches, events, gone, errors } = this.reflector.stats();
    return { lists, watches, events, gone, errors };
  }
}
