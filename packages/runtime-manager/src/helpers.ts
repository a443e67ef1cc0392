// Small pure helpers of the Go kuberuntime (helpers.go, kubecontainer helpers, format.Pod, log paths).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerStatus, PodStatus } from '@kubelet-ts/core';
import { findContainerStatusByName } from '@kubelet-ts/core';

/** Go's minimumGracePeriodInSeconds: containers always get at least this long to stop. */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;
/** Go: kubecontainer.MaxContainerTerminationMessageLength. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH = 1024 * 4;
/** Go: kubecontainer.MaxContainerTerminationMessageLogLength. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH = 1024 * 2;
/** Go: kubecontainer.MaxContainerTerminationMessageLogLines. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES = 80;

/** The container's log path relative to the pod log directory: `<container>/<restartCount>.log`. */
export function buildContainerLogsPath(containerName: string, restartCount: number): string {
  return `${containerName}/${restartCount}.log`;
}

/** Go's format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: V1Pod | undefined): string {
  if (!pod) return '<nil>';
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

/** The spec of the named container among containers, init containers and ephemeral containers (Go: GetContainerSpec). */
export function getContainerSpec(pod: V1Pod, containerName: string): V1Container | undefined {
  const spec = pod.spec;
  if (!spec) return undefined;
  for (const c of spec.containers ?? []) if (c.name === containerName) return c;
  for (const c of spec.initContainers ?? []) if (c.name === containerName) return c;
  for (const c of spec.ephemeralContainers ?? []) if (c.name === containerName) return c as V1Container;
  return undefined;
}

export function isHostNetworkPod(pod: V1Pod | undefined): boolean {
  return pod?.spec?.hostNetwork === true;
}

/** Go: shouldRestartOnFailure. */
export function shouldRestartOnFailure(pod: V1Pod): boolean {
  return pod.spec?.restartPolicy !== 'Never';
}

/** Go: isInitContainerFailed. */
export function isInitContainerFailed(status: ContainerStatus): boolean {
  if (status.reason === 'OOMKilled') return true;
  if (status.state === 'exited' && status.exitCode !== 0) return true;
  return status.state === 'unknown';
}

/** Go: containerSucceeded. */
export function containerSucceeded(container: V1Container, podStatus: PodStatus): boolean {
  const status = findContainerStatusByName(podStatus, container.name);
  return status !== undefined && status.state === 'exited' && status.exitCode === 0;
}

/** CRI timestamps are nanoseconds; the core model uses milliseconds. */
export function nanosToMillis(nanos: number | undefined | null): number {
  if (!nanos) return 0;
  return Math.round(Number(nanos) / 1_000_000);
}


/** The key of a container's CrashLoopBackOff entry (Go: GetStableKey). */
export function getStableKey(pod: V1Pod, container: V1Container, hash: string): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}_${pod.metadata?.uid ?? ''}_${container.name}_${hash}`;
}

/** Message text of an error, using the runtime's own words for CRI errors (Go: grpc status Message()). */
export function errorMessage(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const details = (err as { details?: unknown }).details;
    if (typeof details === 'string' && details !== '' && (err as { rpc?: unknown }).rpc !== undefined) return details;
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return String(err);
}

/** Go's err.Error() of a gRPC error: `rpc error: code = X desc = Y`, or the plain message. */
export function grpcErrorText(err: unknown): string {
  if (typeof err === 'object' && err !== null && (err as { rpc?: unknown }).rpc !== undefined) {
    const e = err as { code?: string; details?: string };
    return `rpc error: code = ${e.code ?? 'Unknown'} desc = ${e.details ?? ''}`;
  }
  return errorMessage(err);
}
