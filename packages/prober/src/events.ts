// The event sink the prober reports to. Same shape as @kubelet-ts/runtime-manager's EventRecorder,
// so the kubelet passes one recorder to both.
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

/** The reasons the prober uses (Go: events.ContainerUnhealthy, events.ContainerProbeWarning). */
export const ProbeEventReason = {
  ContainerUnhealthy: 'Unhealthy',
  ContainerProbeWarning: 'ProbeWarning',
} as const;
