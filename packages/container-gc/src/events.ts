// The event sink container GC reports through (Go: record.EventRecorder). Structurally compatible
// with @kubelet-ts/runtime-manager's EventRecorder and @kubelet-ts/image-gc's GCEventRecorder.
import type { V1ObjectReference } from '@kubernetes/client-node';

export type GCEventType = 'Normal' | 'Warning';

export interface GCEventRecorder {
  event(object: V1ObjectReference, type: GCEventType, reason: string, message: string): void;
}

export const noopGCEventRecorder: GCEventRecorder = { event: () => undefined };

/** Go: events.ContainerGCFailed. */
export const ContainerGCEventReason = {
  ContainerGCFailed: 'ContainerGCFailed',
} as const;
