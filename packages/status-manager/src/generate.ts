// The pod status the kubelet reports, computed from the runtime's view of a pod (Go:
// pkg/kubelet/status/generate.go and kubelet_pods.go's generateAPIPodStatus, getPhase and
// convertToAPIContainerStatuses, with the prober's readiness/startup pass folded in).
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import {
  findContainerStatusByName,
  formatContainerID,
  isRestartableInitContainer,
  isStaticPod,
  shouldContainerBeRestarted,
  type ContainerStatus,
  type PodStatus,
} from '@kubelet-ts/core';
import { keepPhaseReason } from './status-util.js';

export const PodPhase = { Pending: 'Pending', Running: 'Running', Succeeded: 'Succeeded', Failed: 'Failed', Unknown: 'Unknown' } as const;

export const PodConditionType = {
  PodScheduled: 'PodScheduled',
  Ready: 'Ready',
  Initialized: 'Initialized',
  ContainersReady: 'ContainersReady',
  PodReadyToStartContainers: 'PodReadyToStartContainers',
  DisruptionTarget: 'DisruptionTarget',
} as const;

/** Condition reasons (Go: pkg/kubelet/status/generate.go). */
export const UnknownContainerStatuses = 'UnknownContainerStatuses';
export const PodCompleted = 'PodCompleted';
export const PodFailedReason = 'PodFailed';
export const ContainersNotReady = 'ContainersNotReady';
export const ContainersNotInitialized = 'ContainersNotInitialized';
export const ReadinessGatesNotReady = 'ReadinessGatesNotReady';

/** Default waiting reasons and the reason of a container the runtime lost (Go: kubelet and kubecontainer). */
export const ContainerCreating = 'ContainerCreating';
export const PodInitializing = 'PodInitializing';
export const ContainerReasonStatusUnknown = 'ContainerStatusUnknown';

/** Conditions the kubelet owns: it computes them and overwrites whatever the API server holds (Go: kubetypes.PodConditionsByKubelet). */
const CONDITIONS_BY_KUBELET = new Set<string>([
  PodConditionType.PodScheduled,
  PodConditionType.Ready,
  PodConditionType.Initialized,
  PodConditionType.ContainersReady,
  PodConditionType.PodReadyToStartContainers,
]);

export function podConditionByKubelet(type: string): boolean {
  return CONDITIONS_BY_KUBELET.has(type);
}

/** Conditions others also write but the kubelet may set (Go: PodConditionSharedByKubelet, DisruptionTarget). */
export function podConditionSharedByKubelet(type: string): boolean {
  return type === PodConditionType.DisruptionTarget;
}

export function isPodPhaseTerminal(phase: string | undefined): boolean {
  return phase === PodPhase.Succeeded || phase === PodPhase.Failed;
}

export function getContainerStatus(statuses: V1ContainerStatus[] | undefined, name: string): V1ContainerStatus | undefined {
  return statuses?.find((s) => s.name === name);
}

export function getPodCondition(conditions: V1PodCondition[] | undefined, type: string): V1PodCondition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Go's %s of a []string: [a b]. */
const goList = (names: string[]): string => `[${names.join(' ')}]`;

/** kubecontainer.HasAnyRegularContainerStarted: a regular container is or was running. */
export function hasAnyRegularContainerStarted(pod: V1Pod, statuses: V1ContainerStatus[]): boolean {
  const names = new Set((pod.spec?.containers ?? []).map((c) => c.name));
  return statuses.some((s) => names.has(s.name) && (s.state?.running !== undefined || s.state?.terminated !== undefined));
}

/** ContainersReady: every regular container and sidecar is ready (Go: GenerateContainersReadyCondition). */
export function generateContainersReadyCondition(pod: V1Pod, containerStatuses: V1ContainerStatus[] | undefined, phase: string | undefined): V1PodCondition {
  if (containerStatuses === undefined) return { type: PodConditionType.ContainersReady, status: 'False', reason: UnknownContainerStatuses };
  const unknown: string[] = [];
  const unready: string[] = [];
  const check = (c: V1Container): void => {
    const s = getContainerStatus(containerStatuses, c.name);
    if (!s) unknown.push(c.name);
    else if (!s.ready) unready.push(c.name);
  };
  for (const c of pod.spec?.initContainers ?? []) if (isRestartableInitContainer(c)) check(c);
  for (const c of pod.spec?.containers ?? []) check(c);
  if (phase === PodPhase.Succeeded && unknown.length === 0) return terminalCondition(PodConditionType.ContainersReady, phase);
  if (phase === PodPhase.Failed) return terminalCondition(PodConditionType.ContainersReady, phase);
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${goList(unready)}`);
  if (messages.length > 0) return { type: PodConditionType.ContainersReady, status: 'False', reason: ContainersNotReady, message: messages.join(', ') };
  return { type: PodConditionType.ContainersReady, status: 'True' };
}

/** Ready: ContainersReady and every readiness gate's condition True (Go: GeneratePodReadyCondition). */
export function generatePodReadyCondition(
  pod: V1Pod,
  conditions: V1PodCondition[] | undefined,
  containerStatuses: V1ContainerStatus[] | undefined,
  phase: string | undefined,
): V1PodCondition {
  const containersReady = generateContainersReadyCondition(pod, containerStatuses, phase);
  if (containersReady.status !== 'True') {
    return { type: PodConditionType.Ready, status: containersReady.status, reason: containersReady.reason, message: containersReady.message };
  }
  const messages: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = getPodCondition(conditions, gate.conditionType);
    if (!c) messages.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (c.status !== 'True') messages.push(`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`);
  }
  if (messages.length > 0) return { type: PodConditionType.Ready, status: 'False', reason: ReadinessGatesNotReady, message: messages.join(', ') };
  return { type: PodConditionType.Ready, status: 'True' };
}

/**
 * Whether the pod's Ready condition no longer matches its readiness gates' conditions, e.g. after a controller
 * set one (Go: status.NeedToReconcilePodReadiness): the kubelet then syncs the pod so the change reaches the API.
 */
export function needToReconcilePodReadiness(pod: V1Pod): boolean {
  if ((pod.spec?.readinessGates ?? []).length === 0) return false;
  const current = getPodCondition(pod.status?.conditions, PodConditionType.Ready);
  if (!current) return false;
  const expected = generatePodReadyCondition(pod, pod.status?.conditions, pod.status?.containerStatuses, pod.status?.phase);
  return current.status !== expected.status || (current.message ?? '') !== (expected.message ?? '');
}

function isInitContainerInitialized(container: V1Container, status: V1ContainerStatus): boolean {
  return isRestartableInitContainer(container) ? status.started === true : status.ready === true;
}

/** Initialized: every init container completed (sidecars: started) (Go: GeneratePodInitializedCondition). */
export function generatePodInitializedCondition(pod: V1Pod, containerStatuses: V1ContainerStatus[] | undefined, phase: string | undefined): V1PodCondition {
  const inits = pod.spec?.initContainers ?? [];
  if (containerStatuses === undefined && inits.length > 0) {
    return { type: PodConditionType.Initialized, status: 'False', reason: UnknownContainerStatuses };
  }
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = getContainerStatus(containerStatuses, c.name);
    if (!s) unknown.push(c.name);
    else if (!isInitContainerInitialized(c, s)) incomplete.push(c.name);
  }
  if (phase === PodPhase.Succeeded && unknown.length === 0) return { type: PodConditionType.Initialized, status: 'True', reason: PodCompleted };
  if (hasAnyRegularContainerStarted(pod, containerStatuses ?? [])) return { type: PodConditionType.Initialized, status: 'True' };
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (incomplete.length > 0) messages.push(`containers with incomplete status: ${goList(incomplete)}`);
  if (messages.length > 0) return { type: PodConditionType.Initialized, status: 'False', reason: ContainersNotInitialized, message: messages.join(', ') };
  return { type: PodConditionType.Initialized, status: 'True' };
}

/**
 * PodReadyToStartContainers: a ready sandbox exists, so no new one is needed (Go:
 * GeneratePodReadyToStartContainersCondition over kuberuntime's PodSandboxChanged, simplified to
 * "the newest sandbox is ready").
 */
export function generatePodReadyToStartContainersCondition(_pod: V1Pod, status: PodStatus): V1PodCondition {
  const newest = [...status.sandboxStatuses].sort((a, b) => b.createdAt - a.createdAt)[0];
  const ready = newest !== undefined && newest.state === 'SANDBOX_READY';
  return { type: PodConditionType.PodReadyToStartContainers, status: ready ? 'True' : 'False' };
}

function terminalCondition(type: string, phase: string): V1PodCondition {
  const c: V1PodCondition = { type, status: 'False' };
  if (phase === PodPhase.Failed) c.reason = PodFailedReason;
  else if (phase === PodPhase.Succeeded) c.reason = PodCompleted;
  return c;
}

/** ContainersReady False for a terminal phase (Go: generateContainersReadyConditionForTerminalPhase). */
export function generateContainersReadyConditionForTerminalPhase(phase: string): V1PodCondition {
  return terminalCondition(PodConditionType.ContainersReady, phase);
}

/** Ready False for a terminal phase (Go: generatePodReadyConditionForTerminalPhase). */
export function generatePodReadyConditionForTerminalPhase(phase: string): V1PodCondition {
  return terminalCondition(PodConditionType.Ready, phase);
}

/**
 * Go's getPhase: the phase from the pod spec and its container statuses (init and regular
 * together). podIsTerminal says the pod will run nothing more (it is being or has been stopped),
 * so stopped containers make it Succeeded or Failed whatever its restart policy; static pods are
 * exempt, as in Go (#116484).
 */
export function getPhase(pod: V1Pod, info: V1ContainerStatus[], podIsTerminal = false): string {
  const spec = pod.spec;
  const restartPolicy = spec?.restartPolicy ?? 'Always';
  let pendingInitialization = 0;
  let failedInitialization = 0;
  for (const container of spec?.initContainers ?? []) {
    if (isRestartableInitContainer(container)) continue;
    const s = getContainerStatus(info, container.name);
    if (!s) {
      pendingInitialization++;
      continue;
    }
    if (s.state?.running) pendingInitialization++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) {
        if (s.lastState.terminated.exitCode !== 0) failedInitialization++;
      } else pendingInitialization++;
    } else pendingInitialization++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const container of spec?.initContainers ?? []) {
    if (!isRestartableInitContainer(container)) continue;
    const s = getContainerStatus(info, container.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state?.running) {
      if (s.started !== true) pendingInitialization++;
      running++;
    } else if (s.state?.terminated) {
      // Stopped sidecars do not count towards the phase.
    } else if (s.state?.waiting) {
      if (!s.lastState?.terminated) {
        pendingInitialization++;
        waiting++;
      }
    } else {
      pendingInitialization++;
      unknown++;
    }
  }
  for (const container of spec?.containers ?? []) {
    const s = getContainerStatus(info, container.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && restartPolicy === 'Never') return PodPhase.Failed;
  if ((pendingInitialization > 0 && !hasAnyRegularContainerStarted(pod, info)) || waiting > 0) return PodPhase.Pending;
  if (running > 0 && unknown === 0) return PodPhase.Running;
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? PodPhase.Succeeded : PodPhase.Failed;
    if (restartPolicy === 'Always') return PodPhase.Running;
    if (stopped === succeeded) return PodPhase.Succeeded;
    if (restartPolicy === 'Never') return PodPhase.Failed;
    return PodPhase.Running;
  }
  return PodPhase.Pending;
}

/**
 * The phase from separate init and regular container statuses (the signature of the earlier
 * apps/kubelet helper). Prefer getPhase.
 */
export function podPhase(pod: V1Pod, initStatuses: V1ContainerStatus[], statuses: V1ContainerStatus[], podIsTerminal = false): string {
  return getPhase(pod, [...statuses, ...initStatuses], podIsTerminal);
}

/** Why a container is waiting, remembered from the last sync (Go: ReasonCache entries). */
export interface WaitingReason {
  reason: string;
  message?: string;
}

export interface PodStatusInputs {
  pod: V1Pod;
  /** The runtime's view of the pod. */
  status: PodStatus;
  /** The status manager's cached status for the pod (Go: statusManager.GetPodStatus); default pod.status. */
  oldPodStatus?: V1PodStatus;
  /** The pod will run nothing more (terminating or terminated): stopped containers make it terminal. */
  podIsTerminal?: boolean;
  /** Reasons from the last sync for containers that failed to start, by container name. */
  waitingReasons?: Map<string, WaitingReason>;
  /**
   * The prober (Go: prober.Manager.UpdatePodStatus): sets `started` and `ready` on the container statuses,
   * knowing which containers have probes that have not run yet. Takes precedence over readiness/startup.
   */
  probes?: { updatePodStatus(pod: V1Pod, status: V1PodStatus): void };
  /**
   * Readiness probe result by container id (type://id); undefined means no probe, i.e. ready once started.
   * A lookup cannot tell a probe that has not run yet from no probe: give `probes` when there are probes.
   */
  readiness?: (containerId: string) => boolean | undefined;
  /** Startup probe result by container id; undefined means no probe, i.e. started once running. */
  startup?: (containerId: string) => boolean | undefined;
  /** The node's IPs: set hostIP/hostIPs, and podIP(s) of host-network pods. */
  hostIPs?: string[];
  /** ms since the epoch; lastTransitionTime of conditions that changed, and startTime. */
  now: number;
}

const toDate = (ms: number | undefined): Date | undefined => (ms ? new Date(ms) : undefined);

const clone = <T>(v: T): T => structuredClone(v);

function convertContainerStatus(cs: ContainerStatus, old: V1ContainerStatus | undefined): V1ContainerStatus {
  const containerID = formatContainerID(cs.id);
  const status: V1ContainerStatus = {
    name: cs.name,
    restartCount: cs.restartCount,
    image: cs.image,
    imageID: cs.imageRef ?? cs.imageId,
    containerID,
    ready: false,
    state: {},
  };
  switch (cs.state) {
    case 'running':
      status.state = { running: { startedAt: toDate(cs.startedAt) } };
      break;
    case 'created':
      status.state = { waiting: {} };
      break;
    case 'exited':
      status.state = {
        terminated: {
          exitCode: cs.exitCode,
          // Runtimes that give no reason (the local runtime) get the ones containerd reports.
          reason: cs.reason || (cs.exitCode === 0 ? 'Completed' : 'Error'),
          message: cs.message || undefined,
          startedAt: toDate(cs.startedAt),
          finishedAt: toDate(cs.finishedAt),
          containerID,
        },
      };
      break;
    default:
      if (old?.state?.running) {
        status.state = {
          terminated: { reason: ContainerReasonStatusUnknown, message: 'The container could not be located when the pod was terminated', exitCode: 137 },
        };
        status.restartCount = (old.restartCount ?? 0) + 1;
      } else {
        status.state = { waiting: {} };
      }
  }
  return status;
}

/** Go's convertToAPIContainerStatuses for one list (regular or init containers). */
function convertToAPIContainerStatuses(
  inputs: PodStatusInputs,
  previous: V1ContainerStatus[] | undefined,
  containers: V1Container[],
  hasInitContainers: boolean,
  isInit: boolean,
): V1ContainerStatus[] {
  const { pod, status: podStatus } = inputs;
  const oldStatuses = new Map((previous ?? []).map((s) => [s.name, s]));
  const defaultWaiting: V1ContainerState = { waiting: { reason: hasInitContainers ? PodInitializing : ContainerCreating } };
  const statuses = new Map<string, V1ContainerStatus>();
  for (const container of containers) {
    let status: V1ContainerStatus = { name: container.name, image: container.image ?? '', imageID: '', ready: false, restartCount: 0, state: clone(defaultWaiting) };
    const old = oldStatuses.get(container.name);
    if (old) {
      if (old.state?.terminated) status = clone(old);
      else {
        status.restartCount = old.restartCount;
        if (old.lastState) status.lastState = clone(old.lastState);
      }
    }
    statuses.set(container.name, status);
  }

  // A container the runtime no longer knows about that was running: it terminated, we do not know how.
  for (const container of containers) {
    if (podStatus.containerStatuses.some((c) => c.name === container.name)) continue;
    const old = oldStatuses.get(container.name);
    if (!old || old.state?.terminated || !old.state?.running) continue;
    const status = statuses.get(container.name)!;
    const defaultReason = hasInitContainers ? PodInitializing : ContainerCreating;
    if (status.state?.waiting?.reason !== defaultReason) continue;
    if (status.lastState?.terminated) continue;
    status.lastState = {
      terminated: {
        reason: ContainerReasonStatusUnknown,
        message: 'The container could not be located when the pod was deleted.  The container used to be Running',
        exitCode: 137,
      },
    };
    if (!pod.metadata?.deletionTimestamp) status.restartCount = (status.restartCount ?? 0) + 1;
  }

  // The newest attempt gives the state, the one before it the last state.
  const seen = new Map<string, number>();
  for (const cs of [...podStatus.containerStatuses].sort((a, b) => b.createdAt - a.createdAt)) {
    if (!statuses.has(cs.name)) continue;
    const count = seen.get(cs.name) ?? 0;
    if (count >= 2) continue;
    const converted = convertContainerStatus(cs, oldStatuses.get(cs.name));
    if (count === 0) statuses.set(cs.name, converted);
    else statuses.get(cs.name)!.lastState = converted.state;
    seen.set(cs.name, count + 1);
  }

  // Containers that will be restarted (or failed to start) wait, with the reason of the last sync.
  for (const container of containers) {
    if (isInit) {
      const newest = findContainerStatusByName(podStatus, container.name);
      if (newest && newest.state === 'exited' && newest.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(container, pod, podStatus)) continue;
    const reason = inputs.waitingReasons?.get(container.name);
    if (!reason) continue;
    const status = statuses.get(container.name)!;
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: reason.reason, message: reason.message } };
  }

  const result = containers.map((c) => statuses.get(c.name)!);
  // Regular containers are reported sorted by name, init containers in spec order (as Go does).
  if (!isInit) result.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return result;
}

/** The prober's UpdatePodStatus: started and ready for each container. */
function applyProbeResults(inputs: PodStatusInputs, statuses: V1ContainerStatus[], inits: V1ContainerStatus[]): void {
  const specs = new Map((inputs.pod.spec?.initContainers ?? []).map((c) => [c.name, c]));
  for (const s of statuses) {
    const running = s.state?.running !== undefined;
    const started = running && (inputs.startup?.(s.containerID ?? '') ?? true);
    s.started = started;
    s.ready = started && (inputs.readiness?.(s.containerID ?? '') ?? true);
  }
  for (const s of inits) {
    const spec = specs.get(s.name);
    const running = s.state?.running !== undefined;
    const started = running && (inputs.startup?.(s.containerID ?? '') ?? true);
    s.started = started;
    if (s.state?.terminated?.exitCode === 0) s.ready = true;
    else if (spec && isRestartableInitContainer(spec) && started) s.ready = inputs.readiness?.(s.containerID ?? '') ?? true;
    else s.ready = false;
  }
}

/**
 * Keeps lastTransitionTime of conditions whose status did not change against oldConditions and
 * stamps the others with now (Go: updateLastTransitionTime, applied to every condition).
 */
export function updateLastTransitionTimes(conditions: V1PodCondition[] | undefined, oldConditions: V1PodCondition[] | undefined, now: number): void {
  for (const c of conditions ?? []) {
    const old = getPodCondition(oldConditions, c.type);
    if (old && old.status === c.status && old.lastTransitionTime) c.lastTransitionTime = old.lastTransitionTime;
    else c.lastTransitionTime = new Date(Math.floor(now / 1000) * 1000);
  }
}

/**
 * The v1.PodStatus the kubelet reports for a pod (Go: generateAPIPodStatus): container statuses
 * with readiness, phase (never out of a terminal phase), the kubelet's conditions, IPs and start time.
 */
export function generateAPIPodStatus(inputs: PodStatusInputs): V1PodStatus {
  const { pod, status } = inputs;
  const apiStatus = pod.status ?? {};
  const oldPodStatus = inputs.oldPodStatus ?? apiStatus;
  const initSpecs = pod.spec?.initContainers ?? [];
  const hasInit = initSpecs.length > 0;

  const s: V1PodStatus = {};
  const ips = [...status.ips];
  if (ips.length > 0) {
    s.podIPs = ips.map((ip) => ({ ip }));
    s.podIP = ips[0];
  }
  const qosClass = pod.status?.qosClass ?? oldPodStatus.qosClass;
  if (qosClass) s.qosClass = qosClass;
  const containerStatuses = convertToAPIContainerStatuses(inputs, oldPodStatus.containerStatuses, pod.spec?.containers ?? [], hasInit, false);
  const initStatuses = convertToAPIContainerStatuses(inputs, oldPodStatus.initContainerStatuses, initSpecs, hasInit, true);
  if (inputs.probes) inputs.probes.updatePodStatus(pod, { containerStatuses, initContainerStatuses: initStatuses });
  else applyProbeResults(inputs, containerStatuses, initStatuses);
  s.containerStatuses = containerStatuses;
  if (hasInit) s.initContainerStatuses = initStatuses;

  const all = [...containerStatuses, ...initStatuses];
  s.phase = getPhase(pod, all, inputs.podIsTerminal ?? false);
  if (!isPodPhaseTerminal(s.phase)) {
    if (isPodPhaseTerminal(oldPodStatus.phase)) s.phase = oldPodStatus.phase;
    else if (isPodPhaseTerminal(apiStatus.phase)) s.phase = apiStatus.phase;
  }
  if (s.phase === oldPodStatus.phase) {
    const reason = oldPodStatus.reason || apiStatus.reason;
    const message = oldPodStatus.message || apiStatus.message;
    if (reason) s.reason = reason;
    if (message) s.message = message;
  }
  // Pods never leave a terminal phase the API server shows, nor the reason that came with it.
  if (isPodPhaseTerminal(apiStatus.phase) && s.phase !== apiStatus.phase) {
    s.phase = apiStatus.phase;
    keepPhaseReason(s, apiStatus);
  }

  const conditions: V1PodCondition[] = [];
  for (const c of apiStatus.conditions ?? []) if (!podConditionByKubelet(c.type)) conditions.push(clone(c));
  const disruption = getPodCondition(oldPodStatus.conditions, PodConditionType.DisruptionTarget);
  if (disruption) {
    const i = conditions.findIndex((c) => c.type === disruption.type);
    if (i >= 0) conditions[i] = clone(disruption);
    else conditions.push(clone(disruption));
  }
  conditions.push(generatePodReadyToStartContainersCondition(pod, status));
  conditions.push(generatePodInitializedCondition(pod, all, s.phase));
  conditions.push(generatePodReadyCondition(pod, conditions, all, s.phase));
  conditions.push(generateContainersReadyCondition(pod, all, s.phase));
  conditions.push({ type: PodConditionType.PodScheduled, status: 'True' });
  updateLastTransitionTimes(conditions, oldPodStatus.conditions, inputs.now);
  s.conditions = conditions;

  if (inputs.hostIPs && inputs.hostIPs.length > 0) {
    s.hostIP = inputs.hostIPs[0];
    s.hostIPs = inputs.hostIPs.slice(0, 2).map((ip) => ({ ip }));
    if (pod.spec?.hostNetwork && !s.podIP) {
      s.podIP = inputs.hostIPs[0];
      s.podIPs = inputs.hostIPs.slice(0, 2).map((ip) => ({ ip }));
    }
  }
  // A stopped sandbox reports no IPs; the pod keeps the ones it had.
  if (!s.podIP && oldPodStatus.podIP) {
    s.podIP = oldPodStatus.podIP;
    if (oldPodStatus.podIPs) s.podIPs = clone(oldPodStatus.podIPs);
  }
  s.startTime = oldPodStatus.startTime ?? apiStatus.startTime ?? new Date(Math.floor(inputs.now / 1000) * 1000);
  return s;
}
