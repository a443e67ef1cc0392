// Mirror pods: the API server copies of static pods (Go: pkg/kubelet/pod/mirror_client.go and the
// mirror pod handling of Kubelet.syncPod and deleteOrphanedMirrorPods).
import type { V1Pod } from '@kubernetes/client-node';
import { ConfigHashAnnotationKey, ConfigMirrorAnnotationKey, isAlreadyExists, isConflict, isNotFound, defaultLogger, parsePodFullName, podFullName, type Logger } from '@kubelet-ts/core';
import type { KubeClient } from './client.js';

/** The node mirror pods are owned by. */
export interface NodeRef {
  name: string;
  uid: string;
  /** Set while the node is being deleted: no mirror pods are created then. */
  deletionTimestamp?: Date | string;
}

export interface MirrorClient {
  /** Creates the mirror pod of a static pod; resolves when it exists (an existing one with the same hash counts). */
  createMirrorPod(staticPod: V1Pod): Promise<void>;
  /**
   * Deletes a mirror pod by full name (name_namespace) with grace period 0, only if its UID is
   * still uid when given. Resolves true when it was deleted, false when there was nothing (or
   * another pod) to delete.
   */
  deleteMirrorPod(fullName: string, uid?: string): Promise<boolean>;
}

export interface MirrorClientOptions {
  /** undefined: standalone, every call is a no-op. */
  kubeClient?: Pick<KubeClient, 'createNamespacedPod' | 'deleteNamespacedPod' | 'readNamespacedPod'>;
  /** The node (from the API server) mirror pods get an owner reference to. */
  getNode: () => NodeRef | undefined | Promise<NodeRef | undefined>;
  logger?: Logger;
}

/** The static pod's hash (its config.hash annotation), which its mirror pod carries as config.mirror. */
export function getPodHash(pod: V1Pod): string {
  return pod.metadata?.annotations?.[ConfigHashAnnotationKey] ?? '';
}

/** Go's IsMirrorPodOf: same name and namespace, and a mirror annotation equal to the static pod's hash. */
export function isMirrorPodOf(mirrorPod: V1Pod, pod: V1Pod): boolean {
  if (pod.metadata?.name !== mirrorPod.metadata?.name || pod.metadata?.namespace !== mirrorPod.metadata?.namespace) return false;
  const hash = mirrorPod.metadata?.annotations?.[ConfigMirrorAnnotationKey];
  return hash !== undefined && hash === getPodHash(pod);
}

/** The pod the kubelet creates for a static pod: its spec and metadata, the mirror annotation and a Node owner. */
export function makeMirrorPod(staticPod: V1Pod, node: NodeRef): V1Pod {
  const metadata = structuredClone(staticPod.metadata ?? {});
  // The API server assigns these; a create carrying a resourceVersion is refused.
  delete metadata.uid;
  delete metadata.resourceVersion;
  delete metadata.creationTimestamp;
  delete metadata.deletionTimestamp;
  delete metadata.deletionGracePeriodSeconds;
  delete metadata.generation;
  delete metadata.managedFields;
  metadata.annotations = { ...(metadata.annotations ?? {}), [ConfigMirrorAnnotationKey]: getPodHash(staticPod) };
  metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid, controller: true }];
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: structuredClone(staticPod.spec) };
}

export class BasicMirrorClient implements MirrorClient {
  private readonly kubeClient: MirrorClientOptions['kubeClient'];
  private readonly getNode: MirrorClientOptions['getNode'];
  private readonly logger: Logger;

  constructor(opts: MirrorClientOptions) {
    this.kubeClient = opts.kubeClient;
    this.getNode = opts.getNode;
    this.logger = opts.logger ?? defaultLogger;
  }

  async createMirrorPod(staticPod: V1Pod): Promise<void> {
    if (!this.kubeClient) return;
    const node = await this.getNode();
    if (!node) throw new Error('failed to get node info: the node is not known yet');
    const mirror = makeMirrorPod(staticPod, node);
    const namespace = mirror.metadata?.namespace ?? 'default';
    try {
      await this.kubeClient.createNamespacedPod({ namespace, body: mirror });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // Go compares with the object the failed create returns (always empty); we look at the real one.
      const existing = await this.kubeClient.readNamespacedPod({ namespace, name: mirror.metadata!.name! });
      if (existing.metadata?.annotations?.[ConfigMirrorAnnotationKey] === getPodHash(staticPod)) return;
      throw err;
    }
  }

  async deleteMirrorPod(fullName: string, uid?: string): Promise<boolean> {
    if (!this.kubeClient) return false;
    const { name, namespace } = parsePodFullName(fullName);
    this.logger.v(2).info('Deleting a mirror pod', { pod: `${namespace}/${name}`, podUID: uid ?? '' });
    try {
      await this.kubeClient.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0, ...(uid ? { preconditions: { uid } } : {}) } });
      return true;
    } catch (err) {
      // NotFound: already gone; Conflict: the UID precondition failed, the pod is another one.
      if (isNotFound(err) || isConflict(err)) return false;
      this.logger.error('Failed deleting a mirror pod', err, { pod: `${namespace}/${name}` });
      throw err;
    }
  }
}

export type MirrorPodAction = 'none' | 'created' | 'recreated' | 'deleted' | 'skipped';

/**
 * The mirror pod part of Kubelet.syncPod for one static pod: a mirror pod that is being deleted or
 * belongs to another version of the static pod (its hash differs) is deleted, and a missing one is
 * created, unless the node is unknown or being deleted. Errors are logged, as in Go.
 */
export async function syncMirrorPod(
  client: MirrorClient,
  staticPod: V1Pod,
  mirrorPod: V1Pod | undefined,
  opts: { getNode: () => NodeRef | undefined | Promise<NodeRef | undefined>; logger?: Logger },
): Promise<MirrorPodAction> {
  const logger = opts.logger ?? defaultLogger;
  let deleted = false;
  if (mirrorPod) {
    if (!mirrorPod.metadata?.deletionTimestamp && isMirrorPodOf(mirrorPod, staticPod)) return 'none';
    logger.info('Trying to delete pod', { pod: podFullName(staticPod), podUID: mirrorPod.metadata?.uid });
    try {
      deleted = await client.deleteMirrorPod(podFullName(staticPod), mirrorPod.metadata?.uid);
      if (deleted) logger.info('Deleted mirror pod because it is outdated', { pod: podFullName(mirrorPod) });
    } catch (err) {
      logger.error('Failed deleting mirror pod', err, { pod: podFullName(mirrorPod) });
    }
    if (!deleted) return 'none';
  }
  let node: NodeRef | undefined;
  try {
    node = await opts.getNode();
  } catch (err) {
    logger.v(4).info('No need to create a mirror pod, since failed to get node info from the cluster', { err: String(err) });
    return deleted ? 'deleted' : 'skipped';
  }
  if (!node) {
    logger.v(4).info('No need to create a mirror pod, since failed to get node info from the cluster');
    return deleted ? 'deleted' : 'skipped';
  }
  if (node.deletionTimestamp) {
    logger.v(4).info('No need to create a mirror pod, since node has been removed from the cluster', { node: node.name });
    return deleted ? 'deleted' : 'skipped';
  }
  logger.v(4).info('Creating a mirror pod for static pod', { pod: podFullName(staticPod) });
  try {
    await client.createMirrorPod(staticPod);
  } catch (err) {
    logger.error('Failed creating a mirror pod for', err, { pod: podFullName(staticPod) });
    return deleted ? 'deleted' : 'skipped';
  }
  return deleted ? 'recreated' : 'created';
}

/**
 * Go's deleteOrphanedMirrorPods: deletes the mirror pods (by full name) whose static pod is gone,
 * unless a pod worker still runs it. Returns the full names deleted.
 */
export async function deleteOrphanedMirrorPods(
  client: MirrorClient,
  orphanedMirrorPodFullNames: Iterable<string>,
  isPodRunning: (fullName: string) => boolean = () => false,
  logger: Logger = defaultLogger,
): Promise<string[]> {
  const deleted: string[] = [];
  for (const fullName of orphanedMirrorPodFullNames) {
    if (isPodRunning(fullName)) {
      logger.v(3).info('Mirror pod is orphaned but its static pod is still running', { pod: fullName });
      continue;
    }
    try {
      if (await client.deleteMirrorPod(fullName)) deleted.push(fullName);
    } catch (err) {
      logger.error('Encountered error when deleting mirror pod', err, { podName: fullName });
    }
  }
  return deleted;
}
