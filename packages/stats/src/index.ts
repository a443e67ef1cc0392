export * from './api.js';
export { SummaryProvider, type SummaryProviderOptions, type SystemCgroups } from './summary-provider.js';
export { type StatsRuntimeService, removeTerminatedContainers, removeTerminatedPods } from './cri-pod-stats.js';
export { FsCgroupReader, CgroupFileError, parseFlatKeyedFile, type CgroupReader, type CgroupMemory, type CgroupVersion } from './cgroup.js';
export { CpuUsageCache, CPU_USAGE_CACHE_PERIOD_MS, type CpuSample } from './cpu-usage-cache.js';
export {
  diskUsage,
  fsInfo,
  parseNetDev,
  parseDefaultRouteInterface,
  readHostNetwork,
  readTaskLimits,
  readBootTimeMs,
  TMPFS_MAGIC,
  type DiskUsage,
  type FsInfo,
  type HostNetwork,
  type StatfsFunction,
  type StatfsResult,
  type TaskLimits,
} from './host.js';
export { VolumeDirStats, DEFAULT_VOLUME_STATS_PERIOD_MS, type PodVolumeStats, type PodVolumeStatsFunction, type VolumeDirStatsOptions } from './volumes.js';
export { renderResourceMetrics, scrapeResourceMetrics } from './resource-metrics.js';
export { renderCadvisorMetrics, type CadvisorContainerInfo, type CadvisorPressure, type CadvisorPsi, type RenderCadvisorOptions } from './cadvisor-metrics.js';
export { formatGoFloat, escapeLabelValue, renderFamilies, type MetricFamily, type MetricType, type Sample } from './prometheus-text.js';
