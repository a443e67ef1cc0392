// computePodActions: what SyncPod must do to move a pod from its runtime status to its spec
// (Go: kuberuntime_manager.go computePodActions, kuberuntime_container.go
// computeInitContainerActions, kuberuntime/util PodSandboxChanged).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  findContainerStatusByName,
  formatContainerID,
  isRestartableInitContainer,
  shouldContainerBeRestarted,
  type ContainerID,
  type ContainerStatus,
  type PodStatus,
  type SandboxStatus,
} from '@kubelet-ts/core';
import { hashContainer } from './hash.js';
import {
  containerSucceeded,
  isHostNetworkPod,
  isInitContainerFailed,
  shouldRestartOnFailure,
} from './helpers.js';

/** A CRI namespace mode. */
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

/**
 * A sandbox status as this package reports it: core's SandboxStatus plus the network namespace mode
 * the runtime reports (Go reads it from PodSandboxStatus.linux.namespaces.options.network), which
 * computePodActions compares with the pod's hostNetwork.
 */
export interface CriSandboxStatus extends SandboxStatus {
  networkNamespace?: NamespaceMode;
}

/** A probe result as the prober reports it. */
export type ProbeResult = 'success' | 'failure';

/**
 * Looks up the last probe result of a container by its id printed as `type://id`
 * (formatContainerID, the form pod status containerID fields use); undefined when not probed yet.
 */
export type ProbeResultLookup = (containerId: string) => ProbeResult | undefined;

/** Why a container is killed (Go: containerKillReason). */
export type ContainerKillReason = 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'Unknown' | '';

export interface ContainerToKillInfo {
  id: ContainerID;
  name: string;
  container: V1Container;
  message: string;
  reason: ContainerKillReason;
}

/** What to do for a pod (Go: podActions). */
export interface PodActions {
  /** Stop every container and the sandbox. */
  killPod: boolean;
  /** Create a new sandbox (after killing the pod if it had one). */
  createSandbox: boolean;
  /** The existing sandbox id, '' if none (or when the old one must not be reused). */
  sandboxId: string;
  /** The sandbox attempt: the old one's + 1 when recreating. */
  attempt: number;
  /**
   * The next regular (non-sidecar) init container to run; informational, the first non-restartable
   * entry of initContainersToStart. SyncPod starts initContainersToStart.
   */
  nextInitContainerToStart?: V1Container;
  /** Indexes into spec.initContainers to start, in order (sidecars and the next init container). */
  initContainersToStart: number[];
  /** Indexes into spec.containers to start. */
  containersToStart: number[];
  /** Containers to kill, by their id printed as type://id. */
  containersToKill: Map<string, ContainerToKillInfo>;
  /** Indexes into spec.ephemeralContainers to start. */
  ephemeralContainersToStart: number[];
}

export interface ComputePodActionsOptions {
  livenessResults?: ProbeResultLookup;
  startupResults?: ProbeResultLookup;
}

/** The pod's network namespace mode (Go: NetworkNamespaceForPod). */
export function networkNamespaceForPod(pod: V1Pod | undefined): NamespaceMode {
  return isHostNetworkPod(pod) ? 'NODE' : 'POD';
}

/** The pod's IPC namespace mode (Go: IpcNamespaceForPod). */
export function ipcNamespaceForPod(pod: V1Pod | undefined): NamespaceMode {
  return pod?.spec?.hostIPC ? 'NODE' : 'POD';
}

/** The pod's PID namespace mode (Go: PidNamespaceForPod). */
export function pidNamespaceForPod(pod: V1Pod | undefined): NamespaceMode {
  if (pod?.spec?.hostPID) return 'NODE';
  if (pod?.spec?.shareProcessNamespace) return 'POD';
  return 'CONTAINER';
}

function newestFirst(sandboxes: SandboxStatus[]): SandboxStatus[] {
  return [...sandboxes].sort((a, b) => b.createdAt - a.createdAt);
}

/**
 * Whether the pod needs a new sandbox: [changed, attempt for the next sandbox, id of the current
 * one] (Go: PodSandboxChanged). The newest sandbox counts; statuses may come in any order.
 */
export function podSandboxChanged(pod: V1Pod, podStatus: PodStatus): [boolean, number, string] {
  if (podStatus.sandboxStatuses.length === 0) return [true, 0, ''];
  const sandboxes = newestFirst(podStatus.sandboxStatuses);
  const readyCount = sandboxes.filter((s) => s.state === 'SANDBOX_READY').length;
  const newest = sandboxes[0] as CriSandboxStatus;
  if (readyCount > 1) return [true, newest.attempt + 1, newest.id];
  if (newest.state !== 'SANDBOX_READY') return [true, newest.attempt + 1, newest.id];
  // Go compares the runtime's reported network namespace (POD when it reports none).
  if ((newest.networkNamespace ?? 'POD') !== networkNamespaceForPod(pod)) return [true, newest.attempt + 1, ''];
  if (!isHostNetworkPod(pod) && newest.ip === '') return [true, newest.attempt + 1, newest.id];
  return [false, newest.attempt, newest.id];
}

function containerChanged(container: V1Container, status: ContainerStatus): boolean {
  return status.hash !== hashContainer(container);
}

function killInfo(status: ContainerStatus, container: V1Container, message: string, reason: ContainerKillReason): [string, ContainerToKillInfo] {
  return [formatContainerID(status.id), { id: status.id, name: container.name, container, message, reason }];
}

/** Go: hasAnyRegularContainerCreated. */
function hasAnyRegularContainerCreated(pod: V1Pod, podStatus: PodStatus): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const status = findContainerStatusByName(podStatus, c.name);
    return status !== undefined && (status.state === 'created' || status.state === 'running' || status.state === 'exited');
  });
}

/**
 * Sets the init container actions; returns whether the pod is initialized (Go:
 * computeInitContainerActions, the SidecarContainers code path, used for every pod).
 */
function computeInitContainerActions(pod: V1Pod, podStatus: PodStatus, changes: PodActions, opts: ComputePodActionsOptions): boolean {
  const initContainers = pod.spec?.initContainers ?? [];
  if (initContainers.length === 0) return true;

  let podHasInitialized = false;
  for (const container of pod.spec?.containers ?? []) {
    const status = findContainerStatusByName(podStatus, container.name);
    if (status && (status.state === 'created' || status.state === 'running')) {
      podHasInitialized = true;
      break;
    }
  }

  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];

  for (let i = initContainers.length - 1; i >= 0; i--) {
    const container = initContainers[i];
    const restartable = isRestartableInitContainer(container);
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status) {
      if (isPreviouslyInitialized && restartable) toStart.push(i);
      continue;
    }
    if (isPreviouslyInitialized && !restartable) continue;

    switch (status.state) {
      case 'created':
        // Created but never started: the runtime likely failed to start it; start it again.
        toStart.push(i);
        break;
      case 'running': {
        if (!restartable) break; // a regular init container: wait for it to finish
        const id = formatContainerID(status.id);
        if (container.startupProbe) {
          const startup = opts.startupResults?.(id);
          if (startup === undefined) break; // wait for the startup probe
          if (startup !== 'success') {
            const [key, info] = killInfo(status, container, `Init container ${container.name} failed startup probe`, 'StartupProbe');
            changes.containersToKill.set(key, info);
            toStart.push(i);
            break;
          }
        }
        if (i === initContainers.length - 1) podHasInitialized = true;
        else if (!isPreviouslyInitialized) toStart.push(i + 1);

        if (containerChanged(container, status)) {
          const [key, info] = killInfo(status, container, `Init container ${container.name} definition changed`, '');
          changes.containersToKill.set(key, info);
          toStart.push(i);
          break;
        }
        if (container.livenessProbe) {
          const liveness = opts.livenessResults?.(id);
          if (liveness === undefined) break;
          if (liveness === 'failure') {
            const [key, info] = killInfo(status, container, `Init container ${container.name} failed liveness probe`, 'LivenessProbe');
            changes.containersToKill.set(key, info);
            toStart.push(i);
          }
        }
        break;
      }
      case 'exited':
        if (restartable) {
          toStart.push(i);
        } else if (isInitContainerFailed(status)) {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else if (i === initContainers.length - 1) {
          podHasInitialized = true;
        } else {
          toStart.push(i + 1);
        }
        break;
      default: {
        // unknown: kill it before starting it again so two instances never run at once
        const message = `Init container is in "${status.state}" state, try killing it before restart`;
        if (!restartable && !restartOnFailure) {
          changes.killPod = true;
          changes.initContainersToStart = [];
          return false;
        }
        const [key, info] = killInfo(status, container, message, 'Unknown');
        changes.containersToKill.set(key, info);
        toStart.push(i);
      }
    }
    if (!isPreviouslyInitialized) isPreviouslyInitialized = true;
  }

  if (!isPreviouslyInitialized) toStart.push(0);
  changes.initContainersToStart = toStart.reverse();
  return podHasInitialized;
}

function setNextInitContainer(pod: V1Pod, changes: PodActions): PodActions {
  const initContainers = pod.spec?.initContainers ?? [];
  const next = changes.initContainersToStart.find((i) => !isRestartableInitContainer(initContainers[i]));
  if (next !== undefined) changes.nextInitContainerToStart = initContainers[next];
  return changes;
}

/** What SyncPod must do for the pod given its runtime status (Go: computePodActions). */
export function computePodActions(pod: V1Pod, podStatus: PodStatus, opts: ComputePodActionsOptions = {}): PodActions {
  const [createPodSandbox, attempt, sandboxId] = podSandboxChanged(pod, podStatus);
  const changes: PodActions = {
    killPod: createPodSandbox,
    createSandbox: createPodSandbox,
    sandboxId,
    attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: new Map(),
    ephemeralContainersToStart: [],
  };
  const containers = pod.spec?.containers ?? [];
  const initContainers = pod.spec?.initContainers ?? [];

  if (createPodSandbox) {
    if (!shouldRestartOnFailure(pod) && attempt !== 0 && podStatus.containerStatuses.length !== 0) {
      // The pod must not restart: kill what is left, but do not create a sandbox for nothing.
      changes.createSandbox = false;
      return changes;
    }
    const containersToStart: number[] = [];
    containers.forEach((c, idx) => {
      if (pod.spec?.restartPolicy === 'OnFailure' && containerSucceeded(c, podStatus)) return;
      containersToStart.push(idx);
    });
    if (containersToStart.length === 0 && hasAnyRegularContainerCreated(pod, podStatus)) {
      // Initialization done and nothing to start: just kill the pod.
      changes.createSandbox = false;
      return changes;
    }
    if (initContainers.length !== 0) {
      changes.initContainersToStart = [0];
      return setNextInitContainer(pod, changes);
    }
    changes.containersToStart = containersToStart;
    return changes;
  }

  // Ephemeral containers may start before initialization completes; they are never restarted.
  (pod.spec?.ephemeralContainers ?? []).forEach((c, idx) => {
    if (!findContainerStatusByName(podStatus, c.name)) changes.ephemeralContainersToStart.push(idx);
  });

  const hasInitialized = computeInitContainerActions(pod, podStatus, changes, opts);
  if (changes.killPod || !hasInitialized) return setNextInitContainer(pod, changes);

  let keepCount = 0;
  containers.forEach((container, idx) => {
    const status = findContainerStatusByName(podStatus, container.name);
    if (!status || status.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, podStatus)) {
        changes.containersToStart.push(idx);
        if (status && status.state === 'unknown') {
          const [key, info] = killInfo(status, container, `Container is in "${status.state}" state, try killing it before restart`, 'Unknown');
          changes.containersToKill.set(key, info);
        }
      }
      return;
    }
    const id = formatContainerID(status.id);
    let message: string;
    let reason: ContainerKillReason = '';
    let restart = shouldRestartOnFailure(pod);
    if (containerChanged(container, status)) {
      message = `Container ${container.name} definition changed`;
      restart = true; // a changed spec restarts whatever the restart policy
    } else if (opts.livenessResults?.(id) === 'failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (opts.startupResults?.(id) === 'failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    const [key, info] = killInfo(status, container, message, reason);
    changes.containersToKill.set(key, info);
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars must not keep a finished pod alive.
    changes.initContainersToStart = [];
  }
  return setNextInitContainer(pod, changes);
}
