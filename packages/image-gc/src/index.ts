export {
  DEFAULT_IMAGE_GC_POLICY,
  ImageGCPolicyError,
  imageGCPolicyWithDefaults,
  validateImageGCPolicy,
  type ImageGCPolicy,
} from './policy.js';
export {
  CriImageFsStatsProvider,
  type CriImageFsStatsProviderOptions,
  type ImageFsStats,
  type ImageFsStatsProvider,
  type StatfsFunction,
  type StatfsResult,
} from './stats.js';
export { KubeletEventReason, noopEventRecorder, nodeReference, type EventRecorder, type EventType } from '@kubelet-ts/core';
export {
  FREE_ALL_BYTES,
  IMAGE_DETECT_PERIOD_MS,
  IMAGE_GC_PERIOD_MS,
  IMAGE_LIST_PERIOD_MS,
  RealImageGCManager,
  sortForEviction,
  type ImageGCManager,
  type ImageInfo,
  type ImageRecord,
  type ImageRemovalReason,
  type RealImageGCManagerOptions,
  type RemovedImage,
} from './image-gc-manager.js';
