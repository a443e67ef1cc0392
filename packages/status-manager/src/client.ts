// The slice of client-node's CoreV1Api this package calls, and how it reads API errors.
import type { CoreV1Api } from '@kubernetes/client-node';

/** What the status manager, mirror client and event sink call; a CoreV1Api satisfies it. */
export type KubeClient = Pick<
  CoreV1Api,
  'readNamespacedPod' | 'patchNamespacedPodStatus' | 'deleteNamespacedPod' | 'createNamespacedPod' | 'createNamespacedEvent' | 'patchNamespacedEvent'
>;
