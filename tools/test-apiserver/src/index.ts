export {
  TestApiServer,
  startTestApiServer,
  type TestApiServerOptions,
  type ServerClock,
  type TimerHandle,
  type RequestRecord,
  type FailureRule,
  type StoreAccess,
  type KubeconfigOptions,
} from './server.js';
export {
  Store,
  PATCH_CONTENT_TYPES,
  type StoreOptions,
  type StoreEvent,
  type WatchEventType,
  type PatchType,
  type ListOptions,
  type DeleteOptions,
  type WatchOptions,
} from './store.js';
export { ApiError, type KubeStatus, type StatusReason, type StatusDetails } from './errors.js';
export { builtinResources, apiVersionOf, defaultPod, podQOSClass, parseQuantity, type ResourceDef } from './resources.js';
export { jsonMergePatch, strategicMergePatch, jsonPatch, type Json, type JsonObject } from './patch.js';
export { podSchema, nodeSchema, type SmpSchema, type SmpField } from './smp-schema.js';
export { parseLabelSelector, parseFieldSelector, type LabelSelector, type FieldSelector } from './selectors.js';
export { canonicalQuantity, goFormat } from './go-wire.js';
export {
  ServiceAccountTokenIssuer,
  DEFAULT_SERVICE_ACCOUNT_ISSUER,
  LEGACY_ISSUER,
  type TokenIssuerOptions,
  type TokenAuthentication,
} from './tokens.js';
export { SERVICE_ACCOUNT_MOUNT_PATH, type AdmissionConfig, type AdmissionPlugin, type AdmissionContext } from './admission.js';
