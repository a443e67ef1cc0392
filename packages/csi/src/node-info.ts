// NodeInfoManager (Go: pkg/volume/csi/nodeinfomanager, v1.20): the node's CSINode object (storage.k8s.io/v1)
// listing the registered drivers, and what a driver adds to the Node object: its topology segments as labels and
// its node ID in the `csi.volume.kubernetes.io/nodeid` annotation.
import { createHash } from 'node:crypto';
import type { KubeConfig, V1CSINode, V1CSINodeDriver, V1Node } from '@kubernetes/client-node';
import { KeyedLock } from './csi-util.js';
import { apiCallOptions, defaultLogger, errorText, isNotFound, jitter, lazyApiClient, PatchContentType, realClock, type Clock, type Logger } from '@kubelet-ts/core';

/** annotationKeyNodeID: the Node annotation mapping driver names to their node IDs (JSON). */
export const ANNOTATION_KEY_NODE_ID = 'csi.volume.kubernetes.io/nodeid';
/** v1.MigratedPluginsAnnotationKey: the CSINode annotation naming the in-tree plugins migrated to CSI. */
export const MIGRATED_PLUGINS_ANNOTATION_KEY = 'storage.alpha.kubernetes.io/migrated-plugins';
/** util.GetCSIAttachLimitKey's prefix: the Node capacity key of a driver's attach limit (removed on uninstall). */
export const CSI_ATTACH_LIMIT_PREFIX = 'attachable-volumes-csi-';
const MAX_INT32 = 2_147_483_647;

/** wait.Backoff. */
export interface BackoffSteps {
  steps: number;
  durationMs: number;
  factor: number;
  jitter: number;
}

/** updateBackoff: 4 tries, 10 ms growing 5-fold, 10% jitter. */
export const NODE_INFO_UPDATE_BACKOFF: BackoffSteps = { steps: 4, durationMs: 10, factor: 5, jitter: 0.1 };
/** initializeCSINode's initBackoff: 6 tries, 15 ms growing 6-fold (about 140 s in all), 10% jitter. */
export const CSI_NODE_INIT_BACKOFF: BackoffSteps = { steps: 6, durationMs: 15, factor: 6, jitter: 0.1 };

/** wait.ErrWaitTimeout's text. */
const ERR_WAIT_TIMEOUT = 'timed out waiting for the condition';

/** What NodeInfoManager needs of the API server: the node's CSINode and Node objects. */
export interface NodeInfoApi {
  getNode(name: string, signal?: AbortSignal): Promise<V1Node>;
  /** A strategic merge patch of the Node (its labels and annotations). */
  patchNode(name: string, patch: object, signal?: AbortSignal): Promise<void>;
  /** A strategic merge patch of the Node's status subresource. */
  patchNodeStatus(name: string, patch: object, signal?: AbortSignal): Promise<void>;
  /** The CSINode of that name, undefined when there is none. */
  getCSINode(name: string, signal?: AbortSignal): Promise<V1CSINode | undefined>;
  createCSINode(csiNode: V1CSINode, signal?: AbortSignal): Promise<V1CSINode>;
  /** Update with the object's resourceVersion (a conflict rejects with the API's 409). */
  updateCSINode(csiNode: V1CSINode, signal?: AbortSignal): Promise<V1CSINode>;
}

export interface NodeInfoManagerOptions {
  nodeName: string;
  api: NodeInfoApi;
  clock?: Clock;
  /** Where its messages go (default: @kubelet-ts/core's defaultLogger, warnings and errors to stderr). */
  logger?: Logger;
  /**
   * The in-tree plugins whose volumes go through CSI (migrated), written to the CSINode's
   * `storage.alpha.kubernetes.io/migrated-plugins` annotation. Go 1.20 with the default feature gates migrates
   * none, and then the annotation is absent. Default [].
   */
  migratedPlugins?: string[];
  /** Randomness of the retry jitter. */
  random?: () => number;
}

/** utilerrors.NewAggregate(errs).Error(): one message as is, several (duplicates dropped) as `[a, b]`. */
export function aggregateErrorText(errs: unknown[]): string {
  const msgs: string[] = [];
  for (const err of errs) {
    const msg = errorText(err);
    if (!msgs.includes(msg)) msgs.push(msg);
  }
  if (msgs.length === 0) return '';
  if (errs.length === 1 || msgs.length === 1) return msgs[0] as string;
  return `[${msgs.join(', ')}]`;
}

/**
 * The node's CSI bookkeeping in the API: installCsiDriver when a driver registers, uninstallCsiDriver when it goes,
 * initializeCsiNode at start. Each update is retried with Go's backoff (a conflict or a failed request is tried
 * again with a fresh read), and fails with Go's messages.
 */
export class NodeInfoManager {
  private readonly nodeName: string;
  private readonly api: NodeInfoApi;
  private readonly clock: Clock;
  private readonly lock = new KeyedLock();
  private readonly logger: Logger;
  private readonly migratedPlugins: string[];
  private readonly random: () => number;

  constructor(opts: NodeInfoManagerOptions) {
    this.nodeName = opts.nodeName;
    this.api = opts.api;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.migratedPlugins = [...new Set(opts.migratedPlugins ?? [])].sort();
    this.random = opts.random ?? Math.random;
  }

  /** InstallCSIDriver: the driver's node ID and topology labels on the Node, then the driver on the CSINode. */
  async installCsiDriver(driverName: string, driverNodeId: string, maxVolumes: number, topology: Record<string, string> | undefined, signal?: AbortSignal): Promise<void> {
    if (driverNodeId === '') throw new Error('error adding CSI driver node info: driverNodeID must not be empty');
    const segments = topology ?? {};
    try {
      await this.updateNode(signal, (node, patch) => {
        updateNodeIdInNode(node, patch, driverName, driverNodeId);
        updateTopologyLabels(node, patch, segments);
      });
    } catch (err) {
      throw new Error(`error updating Node object with CSI driver node info: ${errorText(err)}`, { cause: err });
    }
    try {
      await this.retry(NODE_INFO_UPDATE_BACKOFF, signal, 'error updating CSINode', () => this.tryUpdateCsiNode(driverName, driverNodeId, maxVolumes, segments, signal));
    } catch (err) {
      throw new Error(`error updating CSINode object with CSI driver node info: ${errorText(err)}`, { cause: err });
    }
  }

  /** UninstallCSIDriver: the driver off the CSINode, then its node ID (and attach limit) off the Node. */
  async uninstallCsiDriver(driverName: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.retry(NODE_INFO_UPDATE_BACKOFF, signal, 'error updating CSINode', () => this.tryUninstallDriverFromCsiNode(driverName, signal));
    } catch (err) {
      throw new Error(`error uninstalling CSI driver from CSINode object ${errorText(err)}`, { cause: err });
    }
    try {
      await this.updateNode(signal, (node, patch, statusPatch) => {
        removeMaxAttachLimit(node, statusPatch, driverName);
        removeNodeIdFromNode(node, patch, driverName);
      });
    } catch (err) {
      throw new Error(`error removing CSI driver node info from Node object ${errorText(err)}`, { cause: err });
    }
  }

  /**
   * initializeCSINode (csi_plugin.go) around InitializeCSINodeWithAnnotation: makes sure the node's CSINode exists
   * with the migrated-plugins annotation, retrying over about 140 s (initBackoff). Go's kubelet reports the node not
   * ready until this succeeds and exits when it never does; the caller decides.
   */
  async initializeCsiNode(signal?: AbortSignal): Promise<void> {
    let lastErr: unknown;
    await this.backoffLoop(CSI_NODE_INIT_BACKOFF, signal, async () => {
      this.logger.v(4).info('Initializing migrated drivers on CSINode');
      try {
        await this.initializeCsiNodeWithAnnotation(signal);
        return true;
      } catch (err) {
        lastErr = err;
        this.logger.error('Failed to initialize CSINode', err);
        return false;
      }
    }).catch((err: unknown) => {
      throw new Error(`Failed to initialize CSINode after retrying: ${errorText(lastErr ?? err)}`, { cause: lastErr ?? err });
    });
  }

  /** InitializeCSINodeWithAnnotation: one round of Go's updateBackoff. */
  async initializeCsiNodeWithAnnotation(signal?: AbortSignal): Promise<void> {
    let lastErr: unknown;
    try {
      await this.backoffLoop(NODE_INFO_UPDATE_BACKOFF, signal, async () => {
        try {
          await this.exclusive(() => this.tryInitializeCsiNodeWithAnnotation(signal));
          return true;
        } catch (err) {
          lastErr = err;
          this.logger.v(2).info('Failed to publish CSINode', { err: errorText(err) });
          return false;
        }
      });
    } catch (err) {
      throw new Error(`error updating CSINode annotation: ${errorText(err)}; caused by: ${errorText(lastErr)}`, { cause: lastErr ?? err });
    }
  }

  /** CreateCSINode: an empty CSINode owned by the Node, with the migrated-plugins annotation. */
  async createCsiNode(signal?: AbortSignal): Promise<V1CSINode> {
    const node = await this.api.getNode(this.nodeName, signal);
    const csiNode: V1CSINode = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: {
        name: this.nodeName,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.metadata?.name ?? this.nodeName, uid: node.metadata?.uid ?? '' }],
      },
      spec: { drivers: [] },
    };
    this.setMigrationAnnotation(csiNode);
    return this.api.createCSINode(csiNode, signal);
  }

  private async tryInitializeCsiNodeWithAnnotation(signal?: AbortSignal): Promise<void> {
    const csiNode = await this.api.getCSINode(this.nodeName, signal);
    if (!csiNode) {
      await this.createCsiNode(signal);
      return;
    }
    if (this.setMigrationAnnotation(csiNode)) await this.api.updateCSINode(csiNode, signal);
  }

  private async tryUpdateCsiNode(driverName: string, driverNodeId: string, maxVolumes: number, topology: Record<string, string>, signal?: AbortSignal): Promise<void> {
    let csiNode = await this.api.getCSINode(this.nodeName, signal);
    csiNode ??= await this.createCsiNode(signal);
    await this.installDriverToCsiNode(csiNode, driverName, driverNodeId, maxVolumes, topology, signal);
  }

  private async installDriverToCsiNode(
    csiNode: V1CSINode,
    driverName: string,
    driverNodeId: string,
    maxVolumes: number,
    topology: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<void> {
    const topologyKeys = [...new Set(Object.keys(topology))].sort();
    let specModified = true;
    const drivers: V1CSINodeDriver[] = [];
    for (const driver of csiNode.spec?.drivers ?? []) {
      if (driver.name === driverName) {
        if (driver.nodeID === driverNodeId && sameSet(driver.topologyKeys ?? [], topologyKeys) && keepAllocatableCount(driver, maxVolumes)) specModified = false;
      } else {
        drivers.push(driver);
      }
    }
    const annotationModified = this.setMigrationAnnotation(csiNode);
    if (!specModified && !annotationModified) return;

    const driver: V1CSINodeDriver = { name: driverName, nodeID: driverNodeId, topologyKeys };
    if (maxVolumes > 0) {
      let count = maxVolumes;
      if (count > MAX_INT32) {
        this.logger.warn(`Exceeded max supported attach limit value, truncating it to ${MAX_INT32}`);
        count = MAX_INT32;
      }
      driver.allocatable = { count };
    } else {
      this.logger.error(`Invalid attach limit value ${maxVolumes} cannot be added to CSINode object for ${JSON.stringify(driverName)}`);
    }
    drivers.push(driver);
    csiNode.spec = { ...(csiNode.spec ?? {}), drivers };
    await this.api.updateCSINode(csiNode, signal);
  }

  private async tryUninstallDriverFromCsiNode(driverName: string, signal?: AbortSignal): Promise<void> {
    const csiNode = await this.api.getCSINode(this.nodeName, signal);
    if (!csiNode) return;
    const drivers = csiNode.spec?.drivers ?? [];
    const kept = drivers.filter((d) => d.name !== driverName);
    if (kept.length === drivers.length) return;
    csiNode.spec = { ...(csiNode.spec ?? { drivers: [] }), drivers: kept };
    await this.api.updateCSINode(csiNode, signal);
  }

  /** setMigrationAnnotation: true when the annotation changed. */
  private setMigrationAnnotation(csiNode: V1CSINode): boolean {
    csiNode.metadata ??= {};
    const annotations = { ...(csiNode.metadata.annotations ?? {}) };
    const old = annotations[MIGRATED_PLUGINS_ANNOTATION_KEY] ?? '';
    const oldSet = old.length === 0 ? [] : [...new Set(old.split(','))].sort();
    if (sameSet(oldSet, this.migratedPlugins)) return false;
    if (this.migratedPlugins.length > 0) annotations[MIGRATED_PLUGINS_ANNOTATION_KEY] = this.migratedPlugins.join(',');
    else delete annotations[MIGRATED_PLUGINS_ANNOTATION_KEY];
    csiNode.metadata.annotations = annotations;
    return true;
  }

  /**
   * updateNode: read the Node, apply the changes, patch what changed (metadata on the Node, capacity on its status);
   * retried with updateBackoff.
   */
  private updateNode(signal: AbortSignal | undefined, change: (node: V1Node, patch: MetadataPatch, statusPatch: StatusPatch) => void): Promise<void> {
    return this.retry(NODE_INFO_UPDATE_BACKOFF, signal, 'error updating node', async () => {
      const node = await this.api.getNode(this.nodeName, signal);
      const patch: MetadataPatch = {};
      const statusPatch: StatusPatch = {};
      change(node, patch, statusPatch);
      if (patch.labels || patch.annotations) await this.api.patchNode(this.nodeName, { metadata: patch }, signal);
      if (statusPatch.capacity || statusPatch.allocatable) await this.api.patchNodeStatus(this.nodeName, { status: statusPatch }, signal);
    });
  }

  /**
   * Runs one read-modify-write of the Node or the CSINode at a time (Go: nodeInfoManager.lock): two drivers
   * registering at once would otherwise each patch the nodeid annotation from the same read, and one would be lost.
   */
  private exclusive(fn: () => Promise<void>): Promise<void> {
    return this.lock.run('node-info', fn);
  }

  /** wait.ExponentialBackoff over fn, failing as Go's update loops do: `<prefix>: timed out...; caused by: <errs>`. */
  private async retry(backoff: BackoffSteps, signal: AbortSignal | undefined, prefix: string, fn: () => Promise<void>): Promise<void> {
    const errs: unknown[] = [];
    try {
      await this.backoffLoop(backoff, signal, async () => {
        try {
          await this.exclusive(fn);
          return true;
        } catch (err) {
          if (signal?.aborted) throw err;
          errs.push(err);
          return false;
        }
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new Error(`${prefix}: ${errorText(err)}; caused by: ${aggregateErrorText(errs)}`, { cause: errs[errs.length - 1] ?? err });
    }
  }

  /** wait.ExponentialBackoff: up to steps tries, sleeping (on the clock) between them; rejects ErrWaitTimeout. */
  private async backoffLoop(backoff: BackoffSteps, signal: AbortSignal | undefined, condition: () => Promise<boolean>): Promise<void> {
    let duration = backoff.durationMs;
    for (let step = backoff.steps; step > 0; step--) {
      if (await condition()) return;
      if (step === 1) break;
      await this.clock.sleep(backoff.jitter > 0 ? jitter(duration, backoff.jitter, this.random) : duration, signal);
      duration *= backoff.factor;
    }
    throw new Error(ERR_WAIT_TIMEOUT);
  }
}

interface MetadataPatch {
  labels?: Record<string, string>;
  annotations?: Record<string, string | null>;
}

interface StatusPatch {
  capacity?: Record<string, null>;
  allocatable?: Record<string, null>;
}

function sameSet(a: string[], b: string[]): boolean {
  const x = new Set(a);
  const y = new Set(b);
  if (x.size !== y.size) return false;
  for (const v of x) if (!y.has(v)) return false;
  return true;
}

/** True when the driver's allocatable count already says maxVolumes (or says nothing when there is no limit). */
function keepAllocatableCount(driver: V1CSINodeDriver, maxVolumes: number): boolean {
  const count = driver.allocatable?.count;
  if (count === undefined || count === null) return maxVolumes <= 0;
  return count === Math.min(maxVolumes, MAX_INT32);
}

/** buildNodeIDMapFromAnnotation. */
function nodeIdMap(node: V1Node): Record<string, string> {
  const value = node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID];
  if (value === undefined) return {};
  try {
    const parsed = JSON.parse(value) as unknown;
    if (parsed === null) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`json: cannot unmarshal ${Array.isArray(parsed) ? 'array' : typeof parsed} into Go value of type map[string]string`);
    return { ...(parsed as Record<string, string>) };
  } catch (err) {
    throw new Error(`failed to parse node annotation ${JSON.stringify(ANNOTATION_KEY_NODE_ID)}=${JSON.stringify(value)}: ${errorText(err)}`, { cause: err });
  }
}

/** json.Marshal of a map[string]string: keys sorted. */
function marshalSorted(map: Record<string, string>): string {
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(map).sort()) sorted[key] = map[key] as string;
  return JSON.stringify(sorted);
}

/** updateNodeIDInNode. */
function updateNodeIdInNode(node: V1Node, patch: MetadataPatch, driverName: string, driverNodeId: string): void {
  const map = nodeIdMap(node);
  if (map[driverName] === driverNodeId) return;
  map[driverName] = driverNodeId;
  patch.annotations = { ...(patch.annotations ?? {}), [ANNOTATION_KEY_NODE_ID]: marshalSorted(map) };
}

/** removeNodeIDFromNode: the driver out of the annotation; the annotation goes when it maps nothing. */
function removeNodeIdFromNode(node: V1Node, patch: MetadataPatch, driverName: string): void {
  if (node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID] === undefined) return;
  const map = nodeIdMap(node);
  if (!(driverName in map)) return;
  delete map[driverName];
  patch.annotations = { ...(patch.annotations ?? {}), [ANNOTATION_KEY_NODE_ID]: Object.keys(map).length === 0 ? null : marshalSorted(map) };
}

/** updateTopologyLabels: a label per segment; a label already there with another value is a collision. */
function updateTopologyLabels(node: V1Node, patch: MetadataPatch, topology: Record<string, string>): void {
  const existing = node.metadata?.labels ?? {};
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(topology)) {
    const label = existing[key];
    if (label !== undefined && label !== value) {
      throw new Error(`detected topology value collision: driver reported ${JSON.stringify(key)}:${JSON.stringify(value)} but existing label is ${JSON.stringify(key)}:${JSON.stringify(label)}`);
    }
    if (label === undefined) labels[key] = value;
  }
  if (Object.keys(labels).length > 0) patch.labels = labels;
}

/** util.GetCSIAttachLimitKey: `attachable-volumes-csi-<driver>`, shortened with a hash past 63 characters. */
export function csiAttachLimitKey(driverName: string): string {
  if (CSI_ATTACH_LIMIT_PREFIX.length + driverName.length >= 63) {
    const hashed = createHash('sha1').update(driverName).digest('hex').slice(0, 16);
    return CSI_ATTACH_LIMIT_PREFIX + driverName.slice(0, 23) + hashed;
  }
  return CSI_ATTACH_LIMIT_PREFIX + driverName;
}

/** removeMaxAttachLimit: the driver's `attachable-volumes-csi-<driver>` capacity and allocatable, if any. */
function removeMaxAttachLimit(node: V1Node, statusPatch: StatusPatch, driverName: string): void {
  const key = csiAttachLimitKey(driverName);
  if (node.status?.capacity?.[key] !== undefined) statusPatch.capacity = { [key]: null };
  if (node.status?.allocatable?.[key] !== undefined) statusPatch.allocatable = { [key]: null };
}

/**
 * A NodeInfoApi over the API server of kubeConfig (@kubernetes/client-node's StorageV1Api and CoreV1Api, loaded on
 * the first request).
 */
export function createNodeInfoApi(kubeConfig: KubeConfig): NodeInfoApi {
  const core = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  const storage = lazyApiClient(kubeConfig, (k) => k.StorageV1Api);
  const smp = (signal?: AbortSignal) => apiCallOptions({ signal, contentType: PatchContentType.StrategicMergePatch });
  return {
    getNode: async (name, signal) => (await core()).readNode({ name }, apiCallOptions({ signal })),
    patchNode: async (name, body, signal) => {
      await (await core()).patchNode({ name, body }, smp(signal));
    },
    patchNodeStatus: async (name, body, signal) => {
      await (await core()).patchNodeStatus({ name, body }, smp(signal));
    },
    getCSINode: async (name, signal) => {
      try {
        return await (await storage()).readCSINode({ name }, apiCallOptions({ signal }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    createCSINode: async (body, signal) => (await storage()).createCSINode({ body }, apiCallOptions({ signal })),
    updateCSINode: async (body, signal) => (await storage()).replaceCSINode({ name: body.metadata?.name ?? '', body }, apiCallOptions({ signal })),
  };
}
