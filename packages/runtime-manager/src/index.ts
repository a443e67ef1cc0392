export {
  GenericRuntimeManager,
  KUBE_RUNTIME_API_VERSION,
  convertPodStatusToRunningPod,
  determinePodSandboxIPs,
  toCoreSandboxStatus,
  type GenericRuntimeManagerOptions,
} from './runtime-manager.js';
export {
  computePodActions,
  podSandboxChanged,
  networkNamespaceForPod,
  ipcNamespaceForPod,
  pidNamespaceForPod,
  type PodActions,
  type ContainerToKillInfo,
  type ContainerKillReason,
  type ComputePodActionsOptions,
  type CriSandboxStatus,
  type NamespaceMode,
  type ProbeResult,
  type ProbeResultLookup,
} from './pod-actions.js';
export {
  ImageManager,
  imagePullBackoff,
  applyDefaultImageTag,
  defaultPullPolicy,
  shouldPullImage,
  registryOf,
  authsForImage,
  type EnsureImageResult,
  type ImageManagerOptions,
} from './image-manager.js';
export {
  generatePodSandboxConfig,
  containerSecurityContext,
  linuxContainerResources,
  makeEnvironmentVariables,
  milliCpuToShares,
  milliCpuToQuota,
  podQosClass,
  containerOomScoreAdjust,
  podHostname,
  sysctlToDotsSeparator,
  ContainerConfigError,
  type ConfigMapAndSecretSource,
  type SandboxConfigOptions,
} from './container-config.js';
export { expand, expandAll } from './expansion.js';
export { hashContainer, canonicalJson, fnv32a } from './hash.js';
export * from './labels.js';
export {
  DEFAULT_POD_LOGS_ROOT_DIRECTORY,
  MINIMUM_GRACE_PERIOD_SECONDS,
  buildPodLogsDirectory,
  buildContainerLogsDirectory,
  buildContainerLogsPath,
  getContainerSpec,
  formatPod,
  getStableKey,
  isInitContainerFailed,
  parseQuantity,
} from './helpers.js';
export { KubeletEventReason, noopEventRecorder, type EventRecorder, type EventType, type EventDetails } from '@kubelet-ts/core';
export { nodeFs, type RuntimeFs } from './fs.js';
