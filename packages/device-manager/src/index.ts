export { DeviceManager, DEPRECATION_FILE_NAME, type DevicePluginWatcherHandler, type DeviceManagerLike, type DeviceManagerOptions, type DeviceAdmitResult, type DevicePluginResourceCapacity } from './manager.js';
export { EndpointImpl, ENDPOINT_STOP_GRACE_PERIOD_MS, type Endpoint } from './endpoint.js';
export { PodDevices, type DeviceAllocation, type DeviceRunContainerOptions } from './pod-devices.js';
export {
  CHECKPOINT_FILE_NAME,
  CorruptCheckpointError,
  checkpointChecksum,
  marshalCheckpoint,
  unmarshalCheckpoint,
  readCheckpointFile,
  writeCheckpointFile,
  type CheckpointData,
  type PodDevicesEntry,
} from './checkpoint.js';
export {
  PodResourcesServer,
  PodResourcesClient,
  podResourcesSocketPath,
  POD_RESOURCES_SOCKET,
  POD_RESOURCES_DIR_NAME,
  type PodResourcesServerOptions,
  type DevicesProvider,
} from './pod-resources.js';
export { DevicePluginServer, defaultDevicesEnvName, type DevicePluginServerOptions } from './device-plugin-server.js';
export { isExtendedResourceName, isNativeResource, isQualifiedName } from './resource-name.js';
export * from './proto.js';
