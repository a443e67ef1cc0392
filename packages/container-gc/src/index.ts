export {
  DEFAULT_CONTAINER_GC_POLICY,
  ContainerGCPolicyError,
  containerGCPolicyWithDefaults,
  validateContainerGCPolicy,
  type ContainerGCPolicy,
} from './policy.js';
export {
  evictableContainers,
  parsePodUIDFromLogsDirectory,
  planContainerEviction,
  planSandboxEviction,
  type ContainerEvictionOptions,
  type ContainerGCInfo,
  type ContainersByEvictUnit,
  type EvictUnit,
  type PodStateProvider,
  type SandboxGCInfo,
} from './evict.js';
export { KubeletEventReason, noopEventRecorder, nodeReference, type EventRecorder, type EventType } from '@kubelet-ts/core';
export { nodeGCFs, type ContainerGCFs } from './fs.js';
export {
  CONTAINER_GC_PERIOD_MS,
  ContainerGC,
  type ContainerGCOptions,
  type ContainerGCResult,
  type ContainerGarbageCollector,
} from './container-gc.js';
