// CRI messages -> the core runtime model, as far as the evented PLEG needs it (Go:
// kubeGenericRuntimeManager.GeneratePodStatus and toKubeContainerStatus).
//
// NOTE for the lead: @kubelet-ts/runtime-manager maps the same messages for GetPodStatus; once it
// lands, one of the two mappings should move next to the other (or into core) so the cache never
// holds statuses built two different ways.
import type { ContainerState, ContainerStatus, PodStatus, SandboxStatus } from '@kubelet-ts/core';
import type { runtimeapi } from '@kubelet-ts/cri-client';

/** The label keys the runtime manager puts on containers (Go: pkg/kubelet/kuberuntime/labels.go). */
export const KubernetesContainerNameLabel = 'io.kubernetes.container.name';
export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';

/**
 * CRI timestamps are ns since the epoch; the core model uses ms. Rounded, not truncated: a ns
 * count near 1.7e18 is beyond a double's exact integers, so `ms * 1e6 / 1e6` can land just below ms.
 */
export function nanosToMs(ns: number): number {
  return Math.round(ns / 1_000_000);
}

/** CRI ContainerState -> core ContainerState (Go toKubeContainerState). */
export function toContainerState(state: runtimeapi.ContainerState): ContainerState {
  switch (state) {
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    default:
      return 'unknown';
  }
}

/**
 * One CRI ContainerStatus as the kubelet sees it (Go toKubeContainerStatus): the container name
 * comes from the io.kubernetes.container.name label (falling back to the CRI metadata name), hash
 * and restart count from the annotations; startedAt is set once the container left 'created', and
 * the exit details only for an exited container.
 */
export function toContainerStatus(status: runtimeapi.ContainerStatus, runtimeName: string): ContainerStatus {
  const restartCount = Number.parseInt(status.annotations?.[ContainerRestartCountAnnotation] ?? '0', 10);
  const state = toContainerState(status.state);
  const result: ContainerStatus = {
    id: { type: runtimeName, id: status.id },
    name: status.labels?.[KubernetesContainerNameLabel] ?? status.metadata?.name ?? '',
    state,
    createdAt: nanosToMs(status.createdAt),
    exitCode: 0,
    image: status.image?.image ?? '',
    imageId: status.imageId || status.imageRef,
    imageRef: status.imageRef,
    hash: status.annotations?.[ContainerHashAnnotation] ?? '',
    restartCount: Number.isFinite(restartCount) ? restartCount : 0,
  };
  if (status.logPath) result.logPath = status.logPath;
  if (state !== 'created') result.startedAt = nanosToMs(status.startedAt);
  if (state === 'exited') {
    result.finishedAt = nanosToMs(status.finishedAt);
    result.exitCode = status.exitCode;
    if (status.reason) result.reason = status.reason;
    if (status.message) result.message = status.message;
  }
  return result;
}

/** A CRI PodSandboxStatus as the core model's SandboxStatus. */
export function toSandboxStatus(status: runtimeapi.PodSandboxStatus): SandboxStatus {
  const result: SandboxStatus = {
    id: status.id,
    name: status.metadata?.name ?? '',
    namespace: status.metadata?.namespace ?? '',
    uid: status.metadata?.uid ?? '',
    attempt: status.metadata?.attempt ?? 0,
    state: status.state === 'SANDBOX_READY' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    createdAt: nanosToMs(status.createdAt),
    labels: { ...(status.labels ?? {}) },
    annotations: { ...(status.annotations ?? {}) },
  };
  if (status.network?.ip) result.ip = status.network.ip;
  const additional = (status.network?.additionalIps ?? []).map((p) => p.ip).filter((ip) => ip);
  if (additional.length > 0) result.additionalIps = additional;
  return result;
}

/** The pod IPs a sandbox reports: primary first, then the additional ones (Go determinePodSandboxIPs). */
export function sandboxIPs(status: runtimeapi.PodSandboxStatus): string[] {
  if (!status.network) return [];
  return [status.network.ip, ...status.network.additionalIps.map((p) => p.ip)].filter((ip) => ip);
}

/**
 * The pod status a container event carries (Go GeneratePodStatus): the event's sandbox and the
 * statuses of that sandbox's containers, newest first. Undefined when the event has no sandbox
 * status (the sandbox is already gone; Go logs and skips such events).
 */
export function podStatusFromEvent(event: runtimeapi.ContainerEventResponse, runtimeName: string): PodStatus | undefined {
  const sandbox = event.podSandboxStatus;
  if (!sandbox || !sandbox.metadata) return undefined;
  const containerStatuses = event.containersStatuses.map((c) => toContainerStatus(c, runtimeName));
  containerStatuses.sort((a, b) => b.createdAt - a.createdAt);
  return {
    id: sandbox.metadata.uid,
    name: sandbox.metadata.name,
    namespace: sandbox.metadata.namespace,
    ips: sandboxIPs(sandbox),
    containerStatuses,
    sandboxStatuses: [toSandboxStatus(sandbox)],
    timestamp: nanosToMs(event.createdAt),
  };
}
