// The container runtime as the kubelet sees it (Go: pkg/kubelet/container). Times are ms since epoch.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isRestartableInitContainer } from './pod-update.js';

export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** A container or sandbox id qualified by its runtime, printed as type://id. */
export interface ContainerID {
  type: string;
  id: string;
}

/** Parses 'containerd://abc'; throws on anything not of the form type://id. */
export function parseContainerID(text: string): ContainerID {
  const separator = text.indexOf('://');
  if (separator <= 0 || separator + 3 >= text.length) {
    throw new Error(`invalid container ID: ${JSON.stringify(text)}`);
  }
  return { type: text.slice(0, separator), id: text.slice(separator + 3) };
}

/** type://id, or '' for an empty id (as Go's ContainerID.String of a zero value). */
export function formatContainerID(id: ContainerID): string {
  return id.type === '' && id.id === '' ? '' : `${id.type}://${id.id}`;
}

export interface RuntimeContainer {
  id: ContainerID;
  name: string;
  image: string;
  imageId: string;
  imageRef?: string;
  /** Hash of the container spec it was created from, to detect spec changes. */
  hash: string;
  state: ContainerState;
  createdAt: number;
}

export interface RuntimeSandbox {
  id: ContainerID;
  /** 'running' means the sandbox is ready. */
  state: ContainerState;
  createdAt: number;
}

/** A pod as the runtime lists it: its containers and sandboxes, without detailed status. */
export interface RuntimePod {
  /** The pod UID. */
  id: string;
  name: string;
  namespace: string;
  createdAt: number;
  containers: RuntimeContainer[];
  sandboxes: RuntimeSandbox[];
}

export interface ContainerStatus {
  id: ContainerID;
  name: string;
  state: ContainerState;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode: number;
  image: string;
  imageId: string;
  imageRef?: string;
  hash: string;
  restartCount: number;
  reason?: string;
  message?: string;
  logPath?: string;
}

export interface SandboxStatus {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  createdAt: number;
  ip?: string;
  additionalIps?: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Everything the runtime knows about one pod at a moment (Go: kubecontainer.PodStatus). */
export interface PodStatus {
  /** The pod UID. */
  id: string;
  name: string;
  namespace: string;
  ips: string[];
  containerStatuses: ContainerStatus[];
  sandboxStatuses: SandboxStatus[];
  /** When the status was observed. */
  timestamp: number;
}

/** The status of a pod the runtime has nothing for. */
export function emptyPodStatus(uid: string): PodStatus {
  return { id: uid, name: '', namespace: '', ips: [], containerStatuses: [], sandboxStatuses: [], timestamp: 0 };
}

export type PodLifecycleEventType = 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'PodSync' | 'ContainerChanged';

/** A PLEG event; data is the container id for container events. */
export interface PodLifecycleEvent {
  /** The pod UID. */
  id: string;
  type: PodLifecycleEventType;
  data?: string;
}

/** The most recently created status of the named container (a pod keeps exited attempts around). */
export function findContainerStatusByName(status: PodStatus, name: string): ContainerStatus | undefined {
  let newest: ContainerStatus | undefined;
  for (const candidate of status.containerStatuses) {
    if (candidate.name === name && (newest === undefined || candidate.createdAt > newest.createdAt)) newest = candidate;
  }
  return newest;
}

/** Statuses of the containers currently running. */
export function getRunningContainerStatuses(status: PodStatus): ContainerStatus[] {
  return status.containerStatuses.filter((c) => c.state === 'running');
}

/** The named container of a runtime pod (the most recently created one if several attempts exist). */
export function findRuntimeContainerByName(pod: RuntimePod, name: string): RuntimeContainer | undefined {
  let newest: RuntimeContainer | undefined;
  for (const candidate of pod.containers) {
    if (candidate.name === name && (newest === undefined || candidate.createdAt > newest.createdAt)) newest = candidate;
  }
  return newest;
}

/** Go: kubecontainer.ShouldContainerBeRestarted, for a container of the pod given its runtime status. */
export function shouldContainerBeRestarted(container: V1Container, pod: V1Pod, podStatus: PodStatus): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const status = findContainerStatusByName(podStatus, container.name);
  if (!status) return true;
  if (status.state === 'running') return false;
  if (status.state === 'unknown' || status.state === 'created') return true;
  if (isRestartableInitContainer(container)) return true;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && status.exitCode === 0) return false;
  return true;
}
