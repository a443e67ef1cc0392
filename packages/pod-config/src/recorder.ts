import type { V1Pod } from '@kubernetes/client-node';

/** The slice of client-go's record.EventRecorder PodConfig needs: an event about a pod. */
export interface EventRecorder {
  eventf(pod: V1Pod, eventType: 'Normal' | 'Warning', reason: string, message: string): void;
}

/** Go's events.FailedValidation reason. */
export const FailedValidationReason = 'FailedValidation';

/** Records nothing. */
export const noopRecorder: EventRecorder = { eventf: () => undefined };
