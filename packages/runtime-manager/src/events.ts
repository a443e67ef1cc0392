// A minimal event sink, so the runtime manager can report what the Go kubelet reports as events
// (Go: record.EventRecorder with the reasons of pkg/kubelet/events). The kubelet app plugs in a
// recorder that posts v1 Events; the default drops them.
import type { V1Pod } from '@kubernetes/client-node';

export type EventType = 'Normal' | 'Warning';

export interface EventDetails {
  /** The involved object's fieldPath for container events, e.g. `spec.containers{web}`. */
  fieldPath?: string;
  containerName?: string;
}

export interface EventRecorder {
  event(pod: V1Pod, type: EventType, reason: string, message: string, details?: EventDetails): void;
}

export const noopEventRecorder: EventRecorder = { event: () => undefined };

/** The event reasons the runtime manager uses (Go: pkg/kubelet/events). */
export const EventReason = {
  CreatedContainer: 'Created',
  StartedContainer: 'Started',
  FailedToCreateContainer: 'Failed',
  FailedToStartContainer: 'Failed',
  KillingContainer: 'Killing',
  BackOffStartContainer: 'BackOff',
  PullingImage: 'Pulling',
  PulledImage: 'Pulled',
  FailedToPullImage: 'Failed',
  FailedToInspectImage: 'InspectFailed',
  ErrImageNeverPullPolicy: 'ErrImageNeverPull',
  BackOffPullImage: 'BackOff',
  SandboxChanged: 'SandboxChanged',
  FailedCreatePodSandBox: 'FailedCreatePodSandBox',
  FailedStatusPodSandBox: 'FailedPodSandBoxStatus',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
} as const;
