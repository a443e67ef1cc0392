// The RuntimeClass manager (Go: pkg/kubelet/runtimeclass, v1.20): a list+watch cache of the cluster's
// node.k8s.io/v1 RuntimeClasses, and the lookup of a pod's runtimeClassName to the CRI runtime handler that
// RunPodSandbox gets. An unknown class is an API NotFound error (`runtimeclass.node.k8s.io "x" not found`, the
// lister's message), which fails the pod's sandbox creation until the class appears.
//
// Only client-node's types are imported here: the NodeV1Api client and its Watch are made (and the module
// loaded) on the first list, through core's lazyApiClient/lazyWatch.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import {
  clientNodeWatch,
  lazyApiClient,
  lazyWatch,
  Reflector,
  type Clock,
  type ListerWatcher,
  type Logger,
  type ReflectorStats,
  type ReflectorTuning,
} from '@kubelet-ts/core';

/** The API group and resource of RuntimeClass, as Go's errors name it (`runtimeclass.node.k8s.io`). */
export const RUNTIME_CLASS_GROUP_RESOURCE = 'runtimeclass.node.k8s.io';

/**
 * The part of a node.k8s.io/v1 RuntimeClass the kubelet reads: its name and handler (the pod overhead and
 * scheduling are applied by the API server's RuntimeClass admission and the scheduler).
 */
export interface RuntimeClass {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  /** The CRI runtime handler (RunPodSandboxRequest.runtime_handler). */
  handler: string;
  /** What admission copies to a pod's spec.overhead. */
  overhead?: { podFixed?: Record<string, string> };
}

/**
 * The RuntimeClass is not in the cache (Go: apierrors.NewNotFound from the lister). Carries the API's 404 and
 * `NotFound` so core's isNotFound() knows it.
 */
export class RuntimeClassNotFoundError extends Error {
  override readonly name = 'RuntimeClassNotFoundError';
  /** The API status code of a NotFound error. */
  readonly code = 404;
  /** The API status reason. */
  readonly reason = 'NotFound';
  constructor(readonly runtimeClassName: string) {
    super(`${RUNTIME_CLASS_GROUP_RESOURCE} ${JSON.stringify(runtimeClassName)} not found`);
  }
}

/**
 * A pod names a RuntimeClass but this kubelet has no API server to look it up in (standalone, no --kubeconfig).
 * The Go kubelet then runs the pod on the default handler; running it on another handler than it asked for
 * (runc instead of gVisor or Kata) is not safe, so the sandbox fails instead.
 */
export class RuntimeClassUnavailableError extends Error {
  override readonly name = 'RuntimeClassUnavailableError';
  constructor(readonly runtimeClassName: string) {
    super(
      `RuntimeClass ${JSON.stringify(runtimeClassName)} cannot be looked up: the kubelet runs without an API server (no --kubeconfig), ` +
        'so a pod with spec.runtimeClassName cannot run here; remove runtimeClassName to run it on the default runtime handler',
    );
  }
}

/** What the runtime manager needs: the handler of a RuntimeClass name (Go: RuntimeClassManager.LookupRuntimeHandler). */
export interface RuntimeHandlerResolver {
  /**
   * The runtime handler of the class: '' for none ('' or undefined name). Rejects with RuntimeClassNotFoundError
   * when the class does not exist, or another error naming the class when it cannot be looked up.
   */
  lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string>;
}

/**
 * The runtimeHandler option of the runtime manager for a kubelet without an API server: pods without a
 * runtimeClassName get the default handler (''), a pod with one fails its sandbox with RuntimeClassUnavailableError.
 */
export function standaloneRuntimeHandler(pod: V1Pod): string {
  const name = pod.spec?.runtimeClassName;
  if (name) throw new RuntimeClassUnavailableError(name);
  return '';
}

/** A plain RuntimeClass from a watch event's or list's object (client-node model or wire JSON). */
function toRuntimeClass(obj: unknown): RuntimeClass {
  const raw = (obj ?? {}) as { metadata?: { name?: unknown; resourceVersion?: unknown }; handler?: unknown; overhead?: { podFixed?: unknown } };
  const podFixed = raw.overhead?.podFixed;
  return {
    metadata: {
      name: typeof raw.metadata?.name === 'string' ? raw.metadata.name : '',
      resourceVersion: typeof raw.metadata?.resourceVersion === 'string' ? raw.metadata.resourceVersion : undefined,
    },
    handler: typeof raw.handler === 'string' ? raw.handler : '',
    ...(podFixed && typeof podFixed === 'object' ? { overhead: { podFixed: { ...(podFixed as Record<string, string>) } } } : {}),
  };
}

/** A ListerWatcher of node.k8s.io/v1 RuntimeClasses over @kubernetes/client-node (loaded on the first call). */
export function createRuntimeClassListerWatcher(kubeConfig: KubeConfig): ListerWatcher<RuntimeClass> {
  const api = lazyApiClient(kubeConfig, (k) => k.NodeV1Api);
  return {
    async list(opts) {
      const list = await (await api()).listRuntimeClass(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {});
      return { items: list.items.map(toRuntimeClass), resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watch: clientNodeWatch(lazyWatch(kubeConfig), '/apis/node.k8s.io/v1/runtimeclasses', toRuntimeClass),
  };
}

/** Options of the RuntimeClassManager: where the classes come from, and the reflector's tuning. */
export interface RuntimeClassManagerOptions extends ReflectorTuning {
  /** Builds the lister/watcher (NodeV1Api) when none is given. */
  kubeConfig?: KubeConfig;
  /** The list and watch calls; tests fake them. */
  listerWatcher?: ListerWatcher<RuntimeClass>;
  /**
   * How long a lookup waits for the first list before it fails (Go looks up at once and reports NotFound while
   * the informer has not synced). Default 10 s.
   */
  syncTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/**
 * The cluster's RuntimeClasses kept current by list+watch, and the lookup of a pod's runtimeClassName to its CRI
 * runtime handler (Go: runtimeclass.Manager). Hand `runtimeHandlerFor` to the runtime manager's `runtimeHandler`
 * option; start() it with the kubelet's API server parts.
 */
export class RuntimeClassManager implements RuntimeHandlerResolver {
  private readonly reflector: Reflector<RuntimeClass>;
  private readonly syncTimeoutMs: number;

  constructor(opts: RuntimeClassManagerOptions) {
    if (!opts.listerWatcher && !opts.kubeConfig) throw new Error('RuntimeClassManager needs a kubeConfig or a listerWatcher');
    this.syncTimeoutMs = opts.syncTimeoutMs ?? 10_000;
    this.reflector = new Reflector<RuntimeClass>({
      description: 'runtimeclasses.node.k8s.io',
      listerWatcher: opts.listerWatcher ?? createRuntimeClassListerWatcher(opts.kubeConfig as KubeConfig),
      minWatchTimeoutMs: opts.minWatchTimeoutMs,
      backoffInitialMs: opts.backoffInitialMs,
      backoffMaxMs: opts.backoffMaxMs,
      backoffJitter: opts.backoffJitter,
      random: opts.random,
      clock: opts.clock,
      logger: opts.logger,
    });
  }

  /** Starts listing and watching; returns at once (Go: Manager.Start). Aborting `signal` stops it like stop(). */
  start(signal?: AbortSignal): void {
    this.reflector.start(signal);
  }

  /** Stops the watch; the cache keeps what it had. */
  stop(): Promise<void> {
    return this.reflector.stop();
  }

  /** True once the first list was stored. */
  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** Resolves true once synced, false when timeoutMs passes first or signal aborts (Go: WaitForCacheSync). */
  waitForSync(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return this.reflector.waitForSync(timeoutMs, signal);
  }

  /** The cached RuntimeClass of that name, if any. */
  get(name: string): RuntimeClass | undefined {
    return this.reflector.get('', name);
  }

  /** The counters of the list+watch. */
  stats(): ReflectorStats {
    return this.reflector.stats();
  }

  /**
   * Go: LookupRuntimeHandler: '' for no class; the class's handler; RuntimeClassNotFoundError when it does not
   * exist. Before the first list it waits up to syncTimeoutMs, then fails naming the class.
   */
  async lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string> {
    // The default RuntimeClass always resolves to the empty runtime handler.
    if (!runtimeClassName) return '';
    if (!this.reflector.hasSynced()) {
      if (!this.reflector.isRunning()) throw new Error(`failed to lookup RuntimeClass ${runtimeClassName}: the RuntimeClass manager is not started`);
      if (!(await this.reflector.waitForSync(this.syncTimeoutMs))) {
        throw new Error(`failed to lookup RuntimeClass ${runtimeClassName}: the RuntimeClass cache has not synced with the API server within ${this.syncTimeoutMs} ms`);
      }
    }
    const runtimeClass = this.reflector.get('', runtimeClassName);
    if (!runtimeClass) throw new RuntimeClassNotFoundError(runtimeClassName);
    return runtimeClass.handler;
  }

  /** The runtime handler of a pod's spec.runtimeClassName: the runtime manager's `runtimeHandler` option. */
  runtimeHandlerFor = (pod: V1Pod): Promise<string> => this.lookupRuntimeHandler(pod.spec?.runtimeClassName);
}
