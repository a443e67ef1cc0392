import type { V1Container, V1Pod } from '@kubernetes/client-node';

/** What a PodUpdate means for the pods it carries (Go: kubetypes.PodOperation). */
export enum PodOperation {
  /** The complete current set of pods from a source. */
  SET = 'SET',
  /** Pods new to the source. */
  ADD = 'ADD',
  /** Pods gracefully deleted from the source (deletionTimestamp set). */
  DELETE = 'DELETE',
  /** Pods gone from the source; stop them now. */
  REMOVE = 'REMOVE',
  /** Pods whose spec changed. */
  UPDATE = 'UPDATE',
  /** Pods whose status changed but need no sync of their spec. */
  RECONCILE = 'RECONCILE',
}

/** The sources pods come from; All means every source (in a SET it tells the merger to reset them all). */
export const PodSource = { File: 'file', HTTP: 'http', API: 'api', All: '*' } as const;
export type PodSourceName = string;

export interface PodUpdate {
  pods: V1Pod[];
  op: PodOperation;
  source: PodSourceName;
}

/** The source a pod came from, set by the config sources. */
export const ConfigSourceAnnotationKey = 'kubernetes.io/config.source';
/** Present on a mirror pod: the API server copy of a static pod. */
export const ConfigMirrorAnnotationKey = 'kubernetes.io/config.mirror';
/** When the kubelet first saw the pod. */
export const ConfigFirstSeenAnnotationKey = 'kubernetes.io/config.seen';
/** Hash of a static pod's manifest, also the value of its mirror pod's mirror annotation. */
export const ConfigHashAnnotationKey = 'kubernetes.io/config.hash';

/** kubecontainer.GetPodFullName: name_namespace, unique per node and stable across UID changes. */
export function podFullName(pod: V1Pod): string {
  return buildPodFullName(pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
}

export function buildPodFullName(name: string, namespace: string): string {
  return `${name}_${namespace}`;
}

/** Splits a pod full name back into name and namespace; throws on a malformed one. */
export function parsePodFullName(fullName: string): { name: string; namespace: string } {
  const parts = fullName.split('_');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
    throw new Error(`failed to parse the pod full name ${JSON.stringify(fullName)}`);
  }
  return { name: parts[0], namespace: parts[1] };
}

/** The value of the config.source annotation, undefined when the pod has none. */
export function getPodSource(pod: V1Pod): string | undefined {
  return pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
}

/** A static pod comes from a file or http source rather than the API server. */
export function isStaticPod(pod: V1Pod): boolean {
  const source = getPodSource(pod);
  return source !== undefined && source !== PodSource.API;
}

/** A mirror pod is the API server's read-only copy of a static pod. */
export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotationKey] !== undefined;
}

/** A pod as logs name it (Go: klog.KObj): `namespace/name`. */
export function podRef(pod: V1Pod | undefined): string {
  if (!pod) return '';
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/** An init container with restartPolicy Always is a sidecar (Go: podutil.IsRestartableInitContainer). */
export function isRestartableInitContainer(container: V1Container | undefined): boolean {
  return container?.restartPolicy === 'Always';
}

/** Go: podutil.HasRestartableInitContainer. */
export function hasRestartableInitContainer(pod: V1Pod | undefined): boolean {
  return (pod?.spec?.initContainers ?? []).some(isRestartableInitContainer);
}
