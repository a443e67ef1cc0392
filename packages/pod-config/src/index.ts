export {
  PodConfig,
  checkAndUpdatePod,
  isAnnotationMapEqual,
  podsDifferSemantically,
  podRefText,
  type PodChange,
  type PodConfigMode,
  type PodConfigOptions,
  type PodConfigStats,
  type PodUpdateSink,
} from './config.js';
export { FileSource, manifestExtensions, type FileSourceOptions, type FileSourceStats } from './file-source.js';
export { HttpSource, HttpStatusError, parseManifestUrlHeader, type HttpSourceOptions, type HttpSourceStats, type ManifestUrlHeader } from './http-source.js';
export {
  ApiserverSource,
  GoneError,
  type ApiPodSource,
  createPodListerWatcher,
  nodeFieldSelector,
  type ApiserverSourceOptions,
  type PodListerWatcher,
  type PodWatchEvent,
} from './apiserver-source.js';
export {
  NodePodSource,
  SharedPodWatch,
  boundPodsFieldSelector,
  createBoundPodsListerWatcher,
  type NodePodSourceOptions,
  type SharedPodWatchOptions,
  type SharedPodWatchStats,
} from './shared-pod-watch.js';
export { makePodSourceConfig, type PodSourceConfig, type PodSourceConfigOptions } from './make-pod-source-config.js';
export {
  ManifestError,
  NamespaceDefault,
  applyStaticPodDefaults,
  decodePodsManifest,
  decodeSinglePodManifest,
  defaultImagePullPolicy,
  generatePodName,
  setPodDefaults,
  staticPodUID,
  type DecodeResult,
  type StaticPodOrigin,
} from './static-pod.js';
export {
  formatFieldError,
  formatFieldErrors,
  isDNS1123Label,
  isDNS1123Subdomain,
  validatePod,
  validatePodShape,
  type FieldError,
  type FieldErrorType,
} from './validation.js';
export { deserializePod, serializePod } from './serializer.js';
