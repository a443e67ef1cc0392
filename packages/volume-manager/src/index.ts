export type {
  ConfigMapGetter,
  Mounter,
  MountedVolume,
  NodeFacts,
  PersistentVolumeGetter,
  ResolvedPersistentVolume,
  SecretGetter,
  ServiceAccountTokenGetter,
  UniqueVolumeName,
  VolumeContext,
  VolumeHost,
  VolumePlugin,
  VolumeUsageStats,
} from './types.js';
export { VolumeSetupError } from './types.js';
export { ActualStateOfWorld, DesiredStateOfWorld, type ActualVolume, type ClaimReference, type VolumeToMount } from './state.js';
export { checkClaimIsForPod, checkVolumeMode, persistentVolumeMode, podVolumeClaim, resolvePersistentVolume, type PodVolumeClaim } from './claims.js';
export {
  KubeletVolumeManager,
  OPERATION_BACKOFF_INITIAL_MS,
  OPERATION_BACKOFF_MAX_MS,
  POD_ATTACH_AND_MOUNT_TIMEOUT_MS,
  RECONCILER_LOOP_PERIOD_MS,
  type PodLister,
  type PodVolumeStats,
  type PodStateProvider,
  type VolumeManager,
  type VolumeManagerOptions,
} from './volume-manager.js';
export { escapePluginName, podVolumeDir, podVolumeNamesInUse, podVolumesDir, uniquePodVolumeName, unescapePluginName } from './names.js';
export { makeDevices, type ContainerDevice } from './container-devices.js';
export { makeMounts, translateMountPropagation, type ContainerMount, type MakeMountsOptions, type MountPropagation } from './container-mounts.js';
export {
  CONTAINER_SUBPATH_DIRECTORY_NAME,
  bindSubPath,
  cleanSubPaths,
  expandSubPathExpr,
  prepareSubPath,
  safeMakeDir,
  subPathBindTarget,
  type BindSubPathHooks,
  type PrepareSubPathOptions,
  type SubPath,
  type SubPathBindOptions,
} from './subpath.js';
export { SystemMounter, parseMountInfo, parseMountPoints, type CommandRunner, type SystemMounterOptions, type MountInfoEntry } from './mounter.js';
export {
  MountHelper,
  MountHelperExitedError,
  MountHelperUnavailableError,
  type MountHelperOptions,
  type MountHelperSpawn,
  type SyscallResult,
} from './mount-helper.js';
export { setVolumeOwnership, type OwnershipFs, type OwnershipStat, type SetVolumeOwnershipOptions, type FSGroupChangePolicy } from './ownership.js';
export { AtomicWriter, validatePath, validatePayload, type AtomicWriterFs, type AtomicWriterOptions, type FileProjection } from './atomic-writer.js';
export { ConfigMapPlugin, CONFIGMAP_PLUGIN_NAME, makeConfigMapPayload } from './plugins/configmap.js';
export { SecretPlugin, SECRET_PLUGIN_NAME, makeSecretPayload } from './plugins/secret.js';
export { DownwardAPIPlugin, DOWNWARD_API_PLUGIN_NAME, collectDownwardAPIData } from './plugins/downward-api.js';
export { ProjectedPlugin, PROJECTED_PLUGIN_NAME, DEFAULT_TOKEN_EXPIRATION_SECONDS, collectProjectedData, serviceAccountTokenRequest } from './plugins/projected.js';
export { DEFAULT_MODE, type ApiVolumePluginOptions, type ChownFunction } from './plugins/api-volume.js';
export { defaultVolumePlugins } from './plugins/index.js';
export { EmptyDirPlugin, EMPTY_DIR_PLUGIN_NAME, emptyDirMemorySizeBytes, type EmptyDirPluginOptions } from './plugins/empty-dir.js';
export { HostPathPlugin, HOST_PATH_PLUGIN_NAME, checkHostPathType, type HostPathPluginOptions, type HostPathStat, type StatFn } from './plugins/host-path.js';
export { PersistentClaimPlugin, PVC_PLUGIN_NAME, type PersistentClaimPluginOptions } from './plugins/pvc.js';
export {
  ConfigMapManager,
  ObjectNotFoundError,
  SecretManager,
  WatchBasedObjectManager,
  configMapNamesOf,
  createConfigMapManager,
  createSecretManager,
  secretNamesOf,
  type ConfigMapManagerOptions,
  type ObjectChangeListener,
  type ObjectKind,
  type ObjectManagerOptions,
  type ObjectManagerStats,
  type ObjectReflectorTuning,
  type SecretManagerOptions,
  type WatchBasedObjectManagerOptions,
} from './object-manager.js';
export { TokenManager, createTokenRequester, standaloneTokenRequester, tokenCacheKey, type TokenManagerOptions, type TokenRequester } from './token-manager.js';
export { createPersistentVolumeGetter } from './api-getters.js';
