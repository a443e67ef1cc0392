// Labels and annotations the kubelet puts on sandboxes and containers (Go: kuberuntime/labels.go;
// the pod and container name labels of pkg/kubelet/types/labels.go are @kubelet-ts/core's). The
// runtime only stores them; the kubelet reads them back to rebuild what it needs about containers it
// did not create in this process (restarts, orphans).
import type { V1Container, V1ContainerPort, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import {
  KUBERNETES_CONTAINER_NAME_LABEL,
  KUBERNETES_POD_NAME_LABEL,
  KUBERNETES_POD_NAMESPACE_LABEL,
  KUBERNETES_POD_UID_LABEL,
} from '@kubelet-ts/core';
import { hashContainer } from './hash.js';

/** Go: podDeletionGracePeriodLabel (an annotation despite the name, as in Go). */
export const POD_DELETION_GRACE_PERIOD_LABEL = 'io.kubernetes.pod.deletionGracePeriod';
/** Go: podTerminationGracePeriodLabel. */
export const POD_TERMINATION_GRACE_PERIOD_LABEL = 'io.kubernetes.pod.terminationGracePeriod';
/** Go: containerHashLabel. */
export const CONTAINER_HASH_LABEL = 'io.kubernetes.container.hash';
/** Go: containerRestartCountLabel. */
export const CONTAINER_RESTART_COUNT_LABEL = 'io.kubernetes.container.restartCount';
/** Go: containerTerminationMessagePathLabel. */
export const CONTAINER_TERMINATION_MESSAGE_PATH_LABEL = 'io.kubernetes.container.terminationMessagePath';
/** Go: containerTerminationMessagePolicyLabel. */
export const CONTAINER_TERMINATION_MESSAGE_POLICY_LABEL = 'io.kubernetes.container.terminationMessagePolicy';
/** Go: containerPreStopHandlerLabel. */
export const CONTAINER_PRE_STOP_HANDLER_LABEL = 'io.kubernetes.container.preStopHandler';
/** Go: containerPortsLabel. */
export const CONTAINER_PORTS_LABEL = 'io.kubernetes.container.ports';

/** Sandbox labels: the pod's labels plus its name, namespace and uid (Go: newPodLabels). */
export function newPodLabels(pod: V1Pod): Record<string, string> {
  return {
    ...(pod.metadata?.labels ?? {}),
    [KUBERNETES_POD_NAME_LABEL]: pod.metadata?.name ?? '',
    [KUBERNETES_POD_NAMESPACE_LABEL]: pod.metadata?.namespace ?? '',
    [KUBERNETES_POD_UID_LABEL]: pod.metadata?.uid ?? '',
  };
}

/** Sandbox annotations: the pod's annotations (Go: newPodAnnotations). */
export function newPodAnnotations(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.annotations ?? {}) };
}

/** Go: newContainerLabels. */
export function newContainerLabels(container: V1Container, pod: V1Pod): Record<string, string> {
  return {
    [KUBERNETES_POD_NAME_LABEL]: pod.metadata?.name ?? '',
    [KUBERNETES_POD_NAMESPACE_LABEL]: pod.metadata?.namespace ?? '',
    [KUBERNETES_POD_UID_LABEL]: pod.metadata?.uid ?? '',
    [KUBERNETES_CONTAINER_NAME_LABEL]: container.name,
  };
}

/** Go: newContainerAnnotations (without device-plugin annotations, which come later). */
export function newContainerAnnotations(
  container: V1Container,
  pod: V1Pod,
  restartCount: number,
  extra: Record<string, string> = {},
): Record<string, string> {
  const annotations: Record<string, string> = { ...extra };
  annotations[CONTAINER_HASH_LABEL] = hashContainer(container);
  annotations[CONTAINER_RESTART_COUNT_LABEL] = String(restartCount);
  annotations[CONTAINER_TERMINATION_MESSAGE_PATH_LABEL] = container.terminationMessagePath ?? '';
  annotations[CONTAINER_TERMINATION_MESSAGE_POLICY_LABEL] = container.terminationMessagePolicy ?? '';
  if (pod.metadata?.deletionGracePeriodSeconds !== undefined && pod.metadata.deletionGracePeriodSeconds !== null) {
    annotations[POD_DELETION_GRACE_PERIOD_LABEL] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec?.terminationGracePeriodSeconds !== undefined && pod.spec.terminationGracePeriodSeconds !== null) {
    annotations[POD_TERMINATION_GRACE_PERIOD_LABEL] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) annotations[CONTAINER_PRE_STOP_HANDLER_LABEL] = JSON.stringify(container.lifecycle.preStop);
  if (container.ports && container.ports.length > 0) annotations[CONTAINER_PORTS_LABEL] = JSON.stringify(container.ports);
  return annotations;
}

export interface LabeledContainerInfo {
  containerName: string;
  podName: string;
  podNamespace: string;
  podUid: string;
}

export interface AnnotatedContainerInfo {
  /** Hex, as written; '' when absent. */
  hash: string;
  restartCount: number;
  podDeletionGracePeriod?: number;
  podTerminationGracePeriod?: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  preStopHandler?: V1LifecycleHandler;
  containerPorts?: V1ContainerPort[];
}

/** Go: getContainerInfoFromLabels. */
export function getContainerInfoFromLabels(labels: Record<string, string> | undefined): LabeledContainerInfo {
  const l = labels ?? {};
  return {
    containerName: l[KUBERNETES_CONTAINER_NAME_LABEL] ?? '',
    podName: l[KUBERNETES_POD_NAME_LABEL] ?? '',
    podNamespace: l[KUBERNETES_POD_NAMESPACE_LABEL] ?? '',
    podUid: l[KUBERNETES_POD_UID_LABEL] ?? '',
  };
}

function intOrUndefined(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number.parseInt(text, 10);
  return Number.isFinite(value) ? value : undefined;
}

function jsonOrUndefined<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** Go: getContainerInfoFromAnnotations; malformed values read as absent (Go logs and uses zero values). */
export function getContainerInfoFromAnnotations(annotations: Record<string, string> | undefined): AnnotatedContainerInfo {
  const a = annotations ?? {};
  return {
    hash: a[CONTAINER_HASH_LABEL] ?? '',
    restartCount: intOrUndefined(a[CONTAINER_RESTART_COUNT_LABEL]) ?? 0,
    podDeletionGracePeriod: intOrUndefined(a[POD_DELETION_GRACE_PERIOD_LABEL]),
    podTerminationGracePeriod: intOrUndefined(a[POD_TERMINATION_GRACE_PERIOD_LABEL]),
    terminationMessagePath: a[CONTAINER_TERMINATION_MESSAGE_PATH_LABEL] ?? '',
    terminationMessagePolicy: a[CONTAINER_TERMINATION_MESSAGE_POLICY_LABEL] ?? '',
    preStopHandler: jsonOrUndefined<V1LifecycleHandler>(a[CONTAINER_PRE_STOP_HANDLER_LABEL]),
    containerPorts: jsonOrUndefined<V1ContainerPort[]>(a[CONTAINER_PORTS_LABEL]),
  };
}
