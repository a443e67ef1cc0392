export type { CgroupDriver, CgroupFs, CgroupManager, CgroupName, CgroupVersion, QOSContainersInfo, ResourceConfig } from './types.js';
export { nodeCgroupFs } from './cgroup-fs.js';
export { cgroupfsName, formatCgroupName, newCgroupName, parseCgroupfsToCgroupName } from './cgroup-names.js';
export {
  CgroupfsManager,
  cpuSharesToWeight,
  DEFAULT_CGROUP_MOUNT_ROOT,
  detectCgroupVersion,
  parseMemoryEvents,
  parsePsi,
  V1_SUBSYSTEMS,
  type CgroupfsManagerOptions,
  type MemoryEvents,
  type PressureStats,
  type PsiData,
  type PsiStats,
} from './cgroup-manager.js';
export { createCgroupManager, createCgroupManagerSync, type CreateCgroupManagerOptions } from './create-cgroup-manager.js';
export {
  SYSTEMD_MANAGER_UNAVAILABLE,
  SYSTEMD_NO_SUCH_UNIT,
  SYSTEMD_UNIT_EXISTS,
  SystemdError,
  type SystemdUnitManager,
  type UnitProperty,
  type UnitPropertyValue,
} from './systemd-units.js';
export {
  encodeUnitProperty,
  SYSTEMD_BUS_NAME,
  SYSTEMD_JOB_TIMEOUT_MS,
  SYSTEMD_MANAGER_INTERFACE,
  SYSTEMD_OBJECT_PATH,
  SystemdDbusUnitManager,
  type SystemdDbusUnitManagerOptions,
} from './systemd-dbus.js';
export {
  escapeSystemdCgroupName,
  expandSlice,
  isSystemdStyleName,
  parseSystemdToCgroupName,
  SYSTEMD_ROOT_SLICE,
  SYSTEMD_SLICE_SUFFIX,
  systemdCgroupPath,
  systemdUnitInfo,
  toSystemdName,
  unescapeSystemdCgroupName,
  type SystemdUnitInfo,
} from './systemd-names.js';
export {
  cpuQuotaPerSecUSec,
  createSystemdCgroupManagerSync,
  SYSTEMD_INFINITY,
  SystemdCgroupManager,
  systemdResourceProperties,
  systemdSliceProperties,
  type CreateSystemdCgroupManagerOptions,
  type SystemdCgroupManagerOptions,
} from './systemd-cgroup-manager.js';
export {
  KUBELET_KERNEL_TUNABLES,
  ProcSysctl,
  setupKernelTunables,
  type KernelTunableBehavior,
  type KernelTunableChange,
  type KernelTunablesOptions,
  type Sysctl,
} from './kernel-tunables.js';
export { podRequestsAndLimits, resourceConfigForPod, type ResourceConfigForPodOptions } from './resources.js';
export {
  cleanupOrphanedPodCgroups,
  killProcessWithSigkill,
  NoopPodContainerManager,
  POD_CGROUP_NAME_PREFIX,
  PodContainerManager,
  podCgroupNameSuffix,
  type KillProcess,
  type PodCgroupManager,
  type PodContainerManagerOptions,
} from './pod-container-manager.js';
export {
  ContainerManager,
  containerIdFromCgroup,
  DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME,
  NODE_ALLOCATABLE_ENFORCEMENT,
  NODE_ALLOCATABLE_RETRY_INTERVAL_MS,
  QOS_CGROUP_UPDATE_INTERVAL_MS,
  validateContainerManagerOptions,
  type AppliedCgroup,
  type CgroupOomPressure,
  type ContainerManagerError,
  type ContainerManagerOptions,
  type ContainerManagerStatus,
  type NodeCapacity,
  type PodCgroupStats,
} from './container-manager.js';
/** Go's CPU conversions and QoS class, from @kubelet-ts/core. */
export { CPU_MAX_SHARES, CPU_MIN_SHARES, CPU_QUOTA_PERIOD_US, getPodQOS, milliCpuToQuota, milliCpuToShares, type PodQOSClass } from '@kubelet-ts/core';
