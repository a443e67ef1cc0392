// The event sink image GC reports through (Go: record.EventRecorder with pkg/kubelet/events reasons).
// Structurally compatible with @kubelet-ts/runtime-manager's EventRecorder; the default drops events.
import type { V1ObjectReference } from '@kubernetes/client-node';

export type GCEventType = 'Normal' | 'Warning';

export interface GCEventRecorder {
  /** `object` is the node reference the kubelet reports GC events on. */
  event(object: V1ObjectReference, type: GCEventType, reason: string, message: string): void;
}

export const noopGCEventRecorder: GCEventRecorder = { event: () => undefined };

/** The event reasons image GC uses (Go: pkg/kubelet/events). */
export const ImageGCEventReason = {
  InvalidDiskCapacity: 'InvalidDiskCapacity',
  FreeDiskSpaceFailed: 'FreeDiskSpaceFailed',
  ImageGCFailed: 'ImageGCFailed',
} as const;

/** The node reference Go's kubelet builds (kind Node, uid = name, no namespace). */
export function nodeReference(nodeName: string): V1ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName, namespace: '' };
}
