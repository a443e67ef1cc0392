import type { V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '@kubelet-ts/core';

/** An event about a pod (with an optional container field path) or a node reference. */
export interface KubeletEventRecorder {
  event(object: V1Pod | V1ObjectReference, type: 'Normal' | 'Warning', reason: string, message: string, details?: { fieldPath?: string; containerName?: string }): void;
}

/**
 * The recorder the kubelet uses without an API server: every event is logged as client-go's broadcaster
 * logs it (`"Event occurred" object=... kind=... type=... reason=... message=...`).
 */
export class LoggingEventRecorder implements KubeletEventRecorder {
  constructor(private readonly logger: Logger) {}

  event(object: V1Pod | V1ObjectReference, type: 'Normal' | 'Warning', reason: string, message: string, details?: { fieldPath?: string; containerName?: string }): void {
    const isPod = 'metadata' in object || 'spec' in object;
    const meta: { name?: string; namespace?: string } | undefined = isPod ? (object as V1Pod).metadata : (object as V1ObjectReference);
    const kind = isPod ? 'Pod' : ((object as V1ObjectReference).kind ?? '');
    const fieldPath = details?.fieldPath ?? (details?.containerName ? `spec.containers{${details.containerName}}` : undefined);
    const name = meta?.namespace ? `${meta.namespace}/${meta?.name}` : (meta?.name ?? '');
    const kv = { object: name, fieldPath, kind, apiVersion: 'v1', type, reason, message };
    if (type === 'Warning') this.logger.warn('Event occurred', kv);
    else this.logger.v(3).info('Event occurred', kv);
  }
}
