// Go's watch-based ConfigMap and Secret managers (pkg/kubelet/util/manager/watch_based_manager.go with
// pkg/kubelet/configmap and pkg/kubelet/secret): every object a registered pod references gets its own
// reflector, a list+watch on that one object (fieldSelector metadata.name=<name> in its namespace, the
// only query the Node authorizer allows a kubelet), shared by all the pods that reference it. Reads come
// from the reflector's store, so a volume's periodic refresh costs the API server nothing.
import type { KubeConfig, V1ConfigMap, V1Container, V1EphemeralContainer, V1Pod, V1Secret } from '@kubernetes/client-node';
import { clientNodeWatch, deserializeApiObject, lazyApiClient, lazyWatch, defaultLogger, realClock, Reflector, type Clock, type ListerWatcher, type Logger, type ObjectWithMeta, type ReflectorTuning } from '@kubelet-ts/core';
import type { ConfigMapGetter, SecretGetter } from './types.js';

/** The object kind, as Go's group resource names it in messages (`configmap "x" not found`). */
export type ObjectKind = 'configmap' | 'secret';

/** Knobs of the per-object reflectors (client-go defaults when unset). */
export type ObjectReflectorTuning = ReflectorTuning;

/** What every manager takes besides how to reach its objects. */
export interface ObjectManagerOptions {
  clock?: Clock;
  logger?: Logger;
  /** How long get() waits for a new reflector's first list (Go: 1 s). */
  syncTimeoutMs?: number;
  reflector?: ObjectReflectorTuning;
}

export interface WatchBasedObjectManagerOptions<T> extends ObjectManagerOptions {
  kind: ObjectKind;
  /** The list+watch of one object: fieldSelector metadata.name=<name> in namespace. */
  listerWatcherFor(namespace: string, name: string): ListerWatcher<T>;
  /** An immutable object is never watched again once read. Default: never immutable. */
  isImmutable?(obj: T): boolean;
}

export interface ObjectManagerStats {
  /** Pods registered. */
  pods: number;
  /** Objects referenced by at least one registered pod. */
  objects: number;
  /** Objects whose watch is running (the others were found immutable). */
  activeWatches: number;
  immutable: number;
}

/** Go's apierrors.NewNotFound as client-node reports API errors, so core's isNotFound recognizes it. */
export class ObjectNotFoundError extends Error {
  override readonly name = 'ObjectNotFoundError';
  readonly statusCode = 404;
  readonly code = 404;
  readonly reason = 'NotFound';
  readonly body: { kind: 'Status'; apiVersion: 'v1'; status: 'Failure'; message: string; reason: 'NotFound'; details: { name: string; kind: string }; code: 404 };

  constructor(kind: ObjectKind, name: string) {
    const message = `${kind} "${name}" not found`;
    super(message);
    this.body = { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: 'NotFound', details: { name, kind }, code: 404 };
  }
}

interface CacheItem<T extends ObjectWithMeta> {
  refCount: number;
  reflector: Reflector<T>;
  immutable: boolean;
  /** The object's resourceVersion as last seen ('' while it does not exist); undefined before the first list. */
  seenVersion: string | undefined;
}

/** Told the namespace and name of a watched object that changed, appeared or was deleted. */
export type ObjectChangeListener = (namespace: string, name: string) => void;

/**
 * Keeps, for every registered pod, a watched copy of each object of one kind the pod references.
 * registerPod/unregisterPod never block on the network (Go requires that of RegisterPod); the first
 * get() of an object waits up to syncTimeoutMs for its reflector's first list.
 */
export class WatchBasedObjectManager<T extends ObjectWithMeta> {
  readonly kind: ObjectKind;
  private readonly listerWatcherFor: (namespace: string, name: string) => ListerWatcher<T>;
  private readonly isImmutable: (obj: T) => boolean;
  private readonly namesOf: (pod: V1Pod) => Set<string>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly syncTimeoutMs: number;
  private readonly tuning: ObjectReflectorTuning;
  /** pod namespace/name/uid -> the pod as last registered */
  private readonly pods = new Map<string, V1Pod>();
  /** object namespace/name -> its reflector and reference count */
  private readonly items = new Map<string, CacheItem<T>>();
  private readonly listeners = new Set<ObjectChangeListener>();

  constructor(opts: WatchBasedObjectManagerOptions<T>) {
    this.kind = opts.kind;
    this.listerWatcherFor = opts.listerWatcherFor;
    this.isImmutable = opts.isImmutable ?? (() => false);
    this.namesOf = opts.kind === 'configmap' ? configMapNamesOf : secretNamesOf;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ manager: opts.kind });
    this.syncTimeoutMs = opts.syncTimeoutMs ?? 1000;
    this.tuning = opts.reflector ?? {};
  }

  /**
   * References every object the pod uses. A pod registered again (an update) first references its
   * new set, then drops its old one, so an object in both keeps its watch (Go 1.20's order).
   */
  registerPod(pod: V1Pod): void {
    const key = podKey(pod);
    const prev = this.pods.get(key);
    this.pods.set(key, pod);
    const namespace = pod.metadata?.namespace ?? '';
    for (const name of this.namesOf(pod)) this.addReference(namespace, name);
    if (prev) for (const name of this.namesOf(prev)) this.deleteReference(prev.metadata?.namespace ?? '', name);
  }

  /** Drops the pod's references; an object no registered pod references stops being watched. */
  unregisterPod(pod: V1Pod): void {
    const key = podKey(pod);
    const prev = this.pods.get(key);
    if (!prev) return;
    this.pods.delete(key);
    for (const name of this.namesOf(prev)) this.deleteReference(prev.metadata?.namespace ?? '', name);
  }

  /**
   * The object from its watch's store (never a request of its own). Rejects with Go's errors: `object
   * "ns"/"name" not registered` when no registered pod references it, `failed to sync <kind> cache:
   * timed out waiting for the condition` when its first list has not arrived in time, and an
   * ObjectNotFoundError (`<kind> "name" not found`, statusCode 404) when it does not exist. The object
   * is shared with the store: callers must not modify it.
   */
  async get(namespace: string, name: string): Promise<T> {
    const item = this.items.get(objectKey(namespace, name));
    if (!item) throw new Error(`object ${JSON.stringify(namespace)}/${JSON.stringify(name)} not registered`);
    if (!item.reflector.hasSynced() && !(await item.reflector.waitForSync(this.syncTimeoutMs))) {
      throw new Error(`failed to sync ${this.kind} cache: timed out waiting for the condition`);
    }
    const obj = item.reflector.get(namespace, name);
    if (!obj) throw new ObjectNotFoundError(this.kind, name);
    // Go 1.20 stops watching an object once it is seen immutable: it can never change again (only be
    // deleted, which pods that already use it need not notice).
    if (!item.immutable && this.isImmutable(obj)) {
      item.immutable = true;
      void item.reflector.stop();
      this.logger.v(4).info('Stopped watching for changes - object is immutable', { object: objectKey(namespace, name) });
    }
    return obj;
  }

  /**
   * Calls listener whenever a watched object changes after its first list (Go has no such hook: its
   * volumes see changes at the next periodic sync; this lets them be rewritten at once). Returns the
   * unsubscribe function.
   */
  onChange(listener: ObjectChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): ObjectManagerStats {
    let activeWatches = 0;
    let immutable = 0;
    for (const item of this.items.values()) {
      if (item.reflector.isRunning()) activeWatches++;
      if (item.immutable) immutable++;
    }
    return { pods: this.pods.size, objects: this.items.size, activeWatches, immutable };
  }

  /** Stops every watch and forgets every pod (kubelet shutdown). */
  async stop(): Promise<void> {
    const items = [...this.items.values()];
    this.items.clear();
    this.pods.clear();
    await Promise.all(items.map((item) => item.reflector.stop()));
  }

  private addReference(namespace: string, name: string): void {
    const key = objectKey(namespace, name);
    let item = this.items.get(key);
    if (!item) {
      const created: CacheItem<T> = {
        refCount: 0,
        immutable: false,
        seenVersion: undefined,
        reflector: new Reflector<T>({
          listerWatcher: this.listerWatcherFor(namespace, name),
          description: `${this.kind} ${JSON.stringify(key)}`,
          clock: this.clock,
          logger: this.logger,
          ...this.tuning,
          onChange: () => this.observe(created, namespace, name),
        }),
      };
      item = created;
      this.items.set(key, item);
      // Started now, not at the first get(), so that the list is usually in by the time a volume asks.
      item.reflector.start();
    }
    item.refCount++;
  }

  /** Tells the listeners when the object's version moved (a re-list that found it unchanged is no change). */
  private observe(item: CacheItem<T>, namespace: string, name: string): void {
    const version = item.reflector.get(namespace, name)?.metadata?.resourceVersion ?? '';
    const previous = item.seenVersion;
    item.seenVersion = version;
    if (previous === undefined || previous === version || this.items.get(objectKey(namespace, name)) !== item) return;
    for (const listener of this.listeners) {
      try {
        listener(namespace, name);
      } catch (err) {
        this.logger.error('Object change listener failed', err, { object: objectKey(namespace, name) });
      }
    }
  }

  private deleteReference(namespace: string, name: string): void {
    const key = objectKey(namespace, name);
    const item = this.items.get(key);
    if (!item) return;
    item.refCount--;
    if (item.refCount > 0) return;
    this.items.delete(key);
    void item.reflector.stop();
  }
}

function objectKey(namespace: string, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The uid is part of the key so that a pod deleted and recreated under its name is not confused with its predecessor. */
function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}/${pod.metadata?.uid ?? ''}`;
}

/** Init, regular and ephemeral containers, as Go's VisitContainers with AllContainers. */
function allContainers(pod: V1Pod): (V1Container | V1EphemeralContainer)[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...(pod.spec?.ephemeralContainers ?? [])];
}

/**
 * The Secrets a pod references (Go: podutil.VisitPodSecretNames): image pull secrets, env and envFrom
 * of every container, secret and projected volumes, and the secretRefs of the other volume types.
 * Transitive references (pod -> claim -> volume -> secret) are not followed.
 */
export function secretNamesOf(pod: V1Pod): Set<string> {
  const names = new Set<string>();
  // An empty name cannot be fetched, and watching it would select every object of the namespace.
  const add = (name: string | undefined): void => {
    if (name) names.add(name);
  };
  for (const ref of pod.spec?.imagePullSecrets ?? []) add(ref.name);
  for (const c of allContainers(pod)) {
    for (const from of c.envFrom ?? []) add(from.secretRef?.name);
    for (const env of c.env ?? []) add(env.valueFrom?.secretKeyRef?.name);
  }
  for (const v of pod.spec?.volumes ?? []) {
    if (v.azureFile) add(v.azureFile.secretName);
    else if (v.cephfs) add(v.cephfs.secretRef?.name);
    else if (v.cinder) add(v.cinder.secretRef?.name);
    else if (v.flexVolume) add(v.flexVolume.secretRef?.name);
    else if (v.projected) for (const source of v.projected.sources ?? []) add(source.secret?.name);
    else if (v.rbd) add(v.rbd.secretRef?.name);
    else if (v.secret) add(v.secret.secretName);
    else if (v.scaleIO) add(v.scaleIO.secretRef?.name);
    else if (v.iscsi) add(v.iscsi.secretRef?.name);
    else if (v.storageos) add(v.storageos.secretRef?.name);
    else if (v.csi) add(v.csi.nodePublishSecretRef?.name);
  }
  return names;
}

/** The ConfigMaps a pod references (Go: podutil.VisitPodConfigmapNames): env, envFrom, configMap and projected volumes. */
export function configMapNamesOf(pod: V1Pod): Set<string> {
  const names = new Set<string>();
  const add = (name: string | undefined): void => {
    if (name) names.add(name);
  };
  for (const c of allContainers(pod)) {
    for (const from of c.envFrom ?? []) add(from.configMapRef?.name);
    for (const env of c.env ?? []) add(env.valueFrom?.configMapKeyRef?.name);
  }
  for (const v of pod.spec?.volumes ?? []) {
    if (v.projected) for (const source of v.projected.sources ?? []) add(source.configMap?.name);
    else if (v.configMap) add(v.configMap.name);
  }
  return names;
}

export interface ConfigMapManagerOptions extends ObjectManagerOptions {
  listerWatcherFor(namespace: string, name: string): ListerWatcher<V1ConfigMap>;
}

export interface SecretManagerOptions extends ObjectManagerOptions {
  listerWatcherFor(namespace: string, name: string): ListerWatcher<V1Secret>;
}

/** Go's watching ConfigMap manager. */
export class ConfigMapManager extends WatchBasedObjectManager<V1ConfigMap> implements ConfigMapGetter {
  constructor(opts: ConfigMapManagerOptions) {
    super({ ...opts, kind: 'configmap', isImmutable: (cm) => cm.immutable === true });
  }

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap> {
    return this.get(namespace, name);
  }
}

/** Go's watching Secret manager. */
export class SecretManager extends WatchBasedObjectManager<V1Secret> implements SecretGetter {
  constructor(opts: SecretManagerOptions) {
    super({ ...opts, kind: 'secret', isImmutable: (secret) => secret.immutable === true });
  }

  getSecret(namespace: string, name: string): Promise<V1Secret> {
    return this.get(namespace, name);
  }
}

function withoutManagedFields<T extends { metadata?: { managedFields?: unknown } }>(obj: T): T {
  // managedFields is often most of an object's size and nothing here reads it.
  if (obj.metadata) delete obj.metadata.managedFields;
  return obj;
}

/** A ConfigMapManager over @kubernetes/client-node: one list+watch per ConfigMap, by name. */
export function createConfigMapManager(kubeConfig: KubeConfig, opts: ObjectManagerOptions = {}): ConfigMapManager {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  const watcher = lazyWatch(kubeConfig);
  const deserialize = (obj: unknown): V1ConfigMap => withoutManagedFields(deserializeApiObject(obj, 'V1ConfigMap'));
  return new ConfigMapManager({
    ...opts,
    listerWatcherFor(namespace, name) {
      const fieldSelector = `metadata.name=${name}`;
      return {
        async list({ resourceVersion }) {
          const list = await (await api()).listNamespacedConfigMap({ namespace, fieldSelector, ...(resourceVersion ? { resourceVersion } : {}) });
          return { items: list.items.map(withoutManagedFields), resourceVersion: list.metadata?.resourceVersion ?? '' };
        },
        watch: clientNodeWatch(watcher, `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`, deserialize, { fieldSelector }),
      };
    },
  });
}

/** A SecretManager over @kubernetes/client-node: one list+watch per Secret, by name. */
export function createSecretManager(kubeConfig: KubeConfig, opts: ObjectManagerOptions = {}): SecretManager {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  const watcher = lazyWatch(kubeConfig);
  const deserialize = (obj: unknown): V1Secret => withoutManagedFields(deserializeApiObject(obj, 'V1Secret'));
  return new SecretManager({
    ...opts,
    listerWatcherFor(namespace, name) {
      const fieldSelector = `metadata.name=${name}`;
      return {
        async list({ resourceVersion }) {
          const list = await (await api()).listNamespacedSecret({ namespace, fieldSelector, ...(resourceVersion ? { resourceVersion } : {}) });
          return { items: list.items.map(withoutManagedFields), resourceVersion: list.metadata?.resourceVersion ?? '' };
        },
        watch: clientNodeWatch(watcher, `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, deserialize, { fieldSelector }),
      };
    },
  });
}
