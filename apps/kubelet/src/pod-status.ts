import type { V1Container, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerStatus, PodStatus } from '@kubelet-ts/core';

/** Why a container is waiting, remembered from the last sync (Go: ReasonCache). */
export interface WaitingReason {
  reason: string;
  message?: string;
}

export interface PodStatusInputs {
  pod: V1Pod;
  status: PodStatus;
  /** Reasons from the last sync for containers that are not running, by container name. */
  waitingReasons?: Map<string, WaitingReason>;
  /** Readiness by container id; a running container without an answer counts as ready. */
  readiness?: (containerId: string) => boolean | undefined;
  /**
   * Adjusts the container statuses before the conditions are derived from them: the prober sets
   * `ready` and `started` here (Go: probeManager.UpdatePodStatus inside generateAPIPodStatus).
   */
  updateContainerStatuses?: (status: V1PodStatus) => void;
  now: number;
}

const toDate = (ms: number | undefined) => (ms ? new Date(ms) : undefined);

/** The statuses of one pod's containers, newest attempt first. */
function attemptsOf(status: PodStatus, name: string): ContainerStatus[] {
  return status.containerStatuses.filter((c) => c.name === name).sort((a, b) => b.createdAt - a.createdAt);
}

function containerId(c: ContainerStatus): string {
  return `${c.id.type}://${c.id.id}`;
}

function terminatedState(c: ContainerStatus) {
  return {
    terminated: {
      exitCode: c.exitCode,
      reason: c.reason || (c.exitCode === 0 ? 'Completed' : 'Error'),
      message: c.message || undefined,
      startedAt: toDate(c.startedAt),
      finishedAt: toDate(c.finishedAt),
      containerID: containerId(c),
    },
  };
}

/** The v1.ContainerStatus of one container spec (Go: convertToAPIContainerStatuses). */
function apiContainerStatus(inputs: PodStatusInputs, spec: V1Container, defaultWaitingReason: string): V1ContainerStatus {
  const attempts = attemptsOf(inputs.status, spec.name);
  const current = attempts[0];
  const previous = attempts[1];
  const result: V1ContainerStatus = {
    name: spec.name,
    image: spec.image ?? '',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: {},
    lastState: {},
  };
  const waiting = inputs.waitingReasons?.get(spec.name);
  if (!current) {
    result.state = { waiting: { reason: waiting?.reason ?? defaultWaitingReason, message: waiting?.message } };
    return result;
  }
  result.restartCount = current.restartCount;
  result.imageID = current.imageRef ?? current.imageId;
  result.containerID = containerId(current);
  result.started = current.state === 'running';
  switch (current.state) {
    case 'running':
      result.state = { running: { startedAt: toDate(current.startedAt) } };
      result.ready = inputs.readiness?.(containerId(current)) ?? true;
      break;
    case 'exited':
      // An exited container that will be restarted shows as waiting with its last termination.
      if (waiting) {
        result.state = { waiting: { reason: waiting.reason, message: waiting.message } };
        result.lastState = terminatedState(current);
      } else {
        result.state = terminatedState(current);
      }
      break;
    case 'created':
      result.state = { waiting: { reason: waiting?.reason ?? 'ContainerCreating', message: waiting?.message } };
      break;
    default:
      result.state = { waiting: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' } };
  }
  if (previous && previous.state === 'exited' && !result.lastState?.terminated) result.lastState = terminatedState(previous);
  return result;
}

/** Go's getPhase: the pod phase from its spec and its containers' states. */
export function podPhase(pod: V1Pod, initStatuses: V1ContainerStatus[], statuses: V1ContainerStatus[]): string {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const regularInits = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy !== 'Always');
  let pendingInitialization = 0;
  for (const spec of regularInits) {
    const status = initStatuses.find((s) => s.name === spec.name);
    const terminated = status?.state?.terminated ?? status?.lastState?.terminated;
    if (status?.state?.terminated?.exitCode === 0) continue;
    if (terminated && terminated.exitCode !== 0 && restartPolicy === 'Never' && status?.state?.terminated) return 'Failed';
    pendingInitialization++;
  }
  let running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const status of statuses) {
    if (status.state?.running) running++;
    else if (status.state?.terminated) {
      stopped++;
      if (status.state.terminated.exitCode === 0) succeeded++;
    } else if (status.state?.waiting) {
      if (status.lastState?.terminated) stopped++;
      else waiting++;
    }
  }
  const total = (pod.spec?.containers ?? []).length;
  if (pendingInitialization > 0 || waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0 && stopped + running >= total) {
    if (restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(type: string, ok: boolean, now: Date, reason?: string, message?: string): V1PodCondition {
  return { type, status: ok ? 'True' : 'False', lastTransitionTime: now, lastProbeTime: undefined, reason: ok ? undefined : reason, message: ok ? undefined : message };
}

/**
 * The v1.PodStatus the kubelet reports for a pod (Go: generateAPIPodStatus): phase, conditions,
 * container statuses and IPs, from the runtime's PodStatus and what the last sync remembered.
 */
export function generateAPIPodStatus(inputs: PodStatusInputs): V1PodStatus {
  const { pod, status } = inputs;
  const initSpecs = pod.spec?.initContainers ?? [];
  const initStatuses = initSpecs.map((spec) => apiContainerStatus(inputs, spec, 'PodInitializing'));
  const initialized = initSpecs.every((spec, i) => {
    if (spec.restartPolicy === 'Always') return initStatuses[i].started === true;
    return initStatuses[i].state?.terminated?.exitCode === 0;
  });
  const containerStatuses = (pod.spec?.containers ?? []).map((spec) => apiContainerStatus(inputs, spec, initialized ? 'ContainerCreating' : 'PodInitializing'));
  inputs.updateContainerStatuses?.({ initContainerStatuses: initStatuses, containerStatuses, podIP: status.ips[0] });
  const phase = podPhase(pod, initStatuses, containerStatuses);
  const now = new Date(inputs.now);
  const notReady = containerStatuses.filter((c) => !c.ready).map((c) => c.name);
  const containersReady = notReady.length === 0 && phase !== 'Succeeded' && phase !== 'Failed';
  const sandboxReady = status.sandboxStatuses.some((s) => s.state === 'SANDBOX_READY');
  const uninitialized = initSpecs.filter((_, i) => initStatuses[i].state?.terminated?.exitCode !== 0 && !(initSpecs[i].restartPolicy === 'Always' && initStatuses[i].started));
  const notReadyMessage = `containers with unready status: [${notReady.join(' ')}]`;
  const result: V1PodStatus = {
    phase,
    conditions: [
      condition('PodReadyToStartContainers', sandboxReady, now),
      condition('Initialized', initialized, now, 'ContainersNotInitialized', `containers with incomplete status: [${uninitialized.map((c) => c.name).join(' ')}]`),
      condition('Ready', containersReady, now, phase === 'Succeeded' || phase === 'Failed' ? 'PodCompleted' : 'ContainersNotReady', notReadyMessage),
      condition('ContainersReady', containersReady, now, phase === 'Succeeded' || phase === 'Failed' ? 'PodCompleted' : 'ContainersNotReady', notReadyMessage),
      condition('PodScheduled', true, now),
    ],
    hostIP: undefined,
    podIP: status.ips[0],
    podIPs: status.ips.map((ip) => ({ ip })),
    startTime: pod.status?.startTime ?? now,
    initContainerStatuses: initSpecs.length ? initStatuses : undefined,
    containerStatuses,
    qosClass: pod.status?.qosClass,
  };
  return result;
}

