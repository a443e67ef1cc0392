// @kubelet-ts/csi: the kubelet's CSI support (Go v1.20: pkg/volume/csi, pkg/kubelet/pluginmanager,
// pkg/volume/csi/nodeinfomanager).
export type * from './types.js';
export { CsiCallError, GrpcCode, GRPC_CODE_NAMES, grpcCodeName, isCsiCallError, toCsiCallError, type CallEnd } from './errors.js';
export {
  csiProtoPath,
  pluginRegistrationProtoPath,
  loadCsiPackage,
  loadPluginRegistrationPackage,
  grpcJs,
  unixTarget,
  socketPathOf,
  CSI_PLUGIN_TYPE,
  DEVICE_PLUGIN_TYPE,
  type PluginInfo,
  type RegistrationStatus,
  type GetPluginInfoResponse,
  type PluginCapability,
  type ProbeResponse,
  type CsiGrpc,
  type PluginRegistrationGrpc,
  type ServiceClientCtor,
} from './proto.js';
export { GrpcCsiNodeClient, createCsiNodeClient, CSI_TIMEOUT_MS, type GrpcCsiNodeClientOptions, type CsiIdentityClient } from './node-client.js';
export {
  CsiDriverRegistry,
  CsiRegistrationHandler,
  highestSupportedVersion,
  driverNotFoundError,
  csiLog,
  type CsiDriverRegistryOptions,
  type CsiRegistrationHandlerOptions,
  type CsiNodeInfoUpdater,
} from './registry.js';
export {
  PluginWatcher,
  pluginsRegistryDir,
  PLUGIN_RECONCILE_PERIOD_MS,
  PLUGIN_DIAL_TIMEOUT_MS,
  PLUGIN_GET_INFO_TIMEOUT_MS,
  PLUGIN_NOTIFY_TIMEOUT_MS,
  PLUGIN_RETRY_INITIAL_MS,
  PLUGIN_RETRY_MAX_MS,
  type PluginHandler,
  type PluginWatcherOptions,
  type RegisteredPlugin,
} from './plugin-watcher.js';
export {
  NodeInfoManager,
  createNodeInfoApi,
  aggregateErrorText,
  csiAttachLimitKey,
  ANNOTATION_KEY_NODE_ID,
  MIGRATED_PLUGINS_ANNOTATION_KEY,
  CSI_ATTACH_LIMIT_PREFIX,
  NODE_INFO_UPDATE_BACKOFF,
  CSI_NODE_INIT_BACKOFF,
  type NodeInfoApi,
  type NodeInfoManagerOptions,
  type BackoffSteps,
} from './node-info.js';
export { createCsiApiGetters } from './api-getters.js';
export { CsiVolumePlugin, POD_INFO_KEYS, type CsiVolumePluginOptions } from './volume-plugin.js';
export {
  CSI_PLUGIN_NAME,
  CSI_PLUGIN_DIR_NAME,
  VOL_DATA_FILE_NAME,
  WAIT_FOR_ATTACH_TIMEOUT_MS,
  ATTACH_POLL_INTERVAL_MS,
  CsiVolumeError,
  isFinalCsiError,
  attachmentName,
  ephemeralVolumeHandle,
  csiUniqueVolumeName,
  deviceMountPath,
  blockStagingPath,
  blockPublishPath,
  loadVolumeData,
  type CsiVolumeOperation,
  type VolumeData,
} from './csi-util.js';
