// The event sink every component reports through (Go: record.EventRecorder with the reasons of
// pkg/kubelet/events). Components take an EventRecorder and default to noopEventRecorder; the kubelet
// plugs in one recorder (@kubelet-ts/status-manager's KubeletEventRecorder) that posts v1 Events, or
// logs them when there is no API server.
import type { V1ObjectReference, V1Pod } from '@kubernetes/client-node';

/** Go: v1.EventTypeNormal, v1.EventTypeWarning. */
export type EventType = 'Normal' | 'Warning';

export interface EventDetails {
  /** The involved object's fieldPath for container events, e.g. `spec.containers{web}`. */
  fieldPath?: string;
  /** Sets fieldPath from the pod spec when fieldPath is not given. */
  containerName?: string;
  annotations?: Record<string, string>;
}

/** Anything an event can be about: an API object (a V1Pod, a V1Node...) or a reference to one. */
export type EventObject =
  | V1Pod
  | V1ObjectReference
  | { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } };

export interface EventRecorder {
  event(object: EventObject, type: EventType, reason: string, message: string, details?: EventDetails): void;
}

export const noopEventRecorder: EventRecorder = { event: () => undefined };

/** The reasons the kubelet uses (Go: pkg/kubelet/events). Scheduled is the scheduler's, not ours. */
export const KubeletEventReason = {
  // containers
  CreatedContainer: 'Created',
  StartedContainer: 'Started',
  FailedToCreateContainer: 'Failed',
  FailedToStartContainer: 'Failed',
  KillingContainer: 'Killing',
  PreemptContainer: 'Preempting',
  BackOffStartContainer: 'BackOff',
  ExceededGracePeriod: 'ExceededGracePeriod',
  // pods
  FailedToKillPod: 'FailedKillPod',
  FailedToCreatePodContainer: 'FailedCreatePodContainer',
  FailedToMakePodDataDirectories: 'Failed',
  NetworkNotReady: 'NetworkNotReady',
  // images
  PullingImage: 'Pulling',
  PulledImage: 'Pulled',
  FailedToPullImage: 'Failed',
  FailedToInspectImage: 'InspectFailed',
  ErrImageNeverPullPolicy: 'ErrImageNeverPull',
  BackOffPullImage: 'BackOff',
  // the kubelet and its node
  NodeReady: 'NodeReady',
  NodeNotReady: 'NodeNotReady',
  NodeSchedulable: 'NodeSchedulable',
  NodeNotSchedulable: 'NodeNotSchedulable',
  StartingKubelet: 'Starting',
  KubeletSetupFailed: 'KubeletSetupFailed',
  FailedAttachVolume: 'FailedAttachVolume',
  FailedMountVolume: 'FailedMount',
  VolumeResizeFailed: 'VolumeResizeFailed',
  VolumeResizeSuccess: 'VolumeResizeSuccessful',
  FileSystemResizeFailed: 'FileSystemResizeFailed',
  FileSystemResizeSuccess: 'FileSystemResizeSuccessful',
  FailedMapVolume: 'FailedMapVolume',
  WarnAlreadyMountedVolume: 'AlreadyMountedVolume',
  SuccessfulAttachVolume: 'SuccessfulAttachVolume',
  SuccessfulMountVolume: 'SuccessfulMountVolume',
  NodeRebooted: 'Rebooted',
  NodeShutdown: 'Shutdown',
  ContainerGCFailed: 'ContainerGCFailed',
  ImageGCFailed: 'ImageGCFailed',
  FailedNodeAllocatableEnforcement: 'FailedNodeAllocatableEnforcement',
  SuccessfulNodeAllocatableEnforcement: 'NodeAllocatableEnforced',
  SandboxChanged: 'SandboxChanged',
  FailedCreatePodSandBox: 'FailedCreatePodSandBox',
  FailedStatusPodSandBox: 'FailedPodSandBoxStatus',
  FailedMountOnFilesystemMismatch: 'FailedMountOnFilesystemMismatch',
  InvalidDiskCapacity: 'InvalidDiskCapacity',
  FreeDiskSpaceFailed: 'FreeDiskSpaceFailed',
  // probes, workers, config, hooks
  ContainerUnhealthy: 'Unhealthy',
  ContainerProbeWarning: 'ProbeWarning',
  FailedSync: 'FailedSync',
  FailedValidation: 'FailedValidation',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
} as const;

/** The reference the kubelet reports node events on (Go: kind Node, uid = the node name, no namespace). */
export function nodeReference(nodeName: string): V1ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName, namespace: '' };
}

/**
 * The fieldPath of a pod's container in events (Go: kubecontainer's fieldPath for GenerateContainerRef):
 * containers, then init containers, then ephemeral containers; undefined when the spec has no such container.
 */
export function containerFieldPath(pod: V1Pod, containerName: string): string | undefined {
  if (pod.spec?.containers?.some((c) => c.name === containerName)) return `spec.containers{${containerName}}`;
  if (pod.spec?.initContainers?.some((c) => c.name === containerName)) return `spec.initContainers{${containerName}}`;
  if (pod.spec?.ephemeralContainers?.some((c) => c.name === containerName)) return `spec.ephemeralContainers{${containerName}}`;
  return undefined;
}

/**
 * containerFieldPath for a container the caller holds the spec of (a component acting on it): one the
 * pod's spec does not list, e.g. an orphan whose spec was restored from its labels, is reported as a
 * regular container.
 */
export function containerSpecFieldPath(pod: V1Pod, containerName: string): string {
  return containerFieldPath(pod, containerName) ?? `spec.containers{${containerName}}`;
}
