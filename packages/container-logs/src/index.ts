export { LogOptionsError, parseLogOptions, parseRFC3339, type LogOptions } from './options.js';
export { findTailLineStartIndex, TAIL_BLOCK_SIZE } from './tail.js';
export {
  LOG_FORCE_CHECK_PERIOD_MS,
  STATE_CHECK_PERIOD_MS,
  formatTimestampFixed,
  readLogs,
  type ReadLogsDeps,
  type ReadLogsOptions,
} from './read-logs.js';
export {
  COMPRESS_SUFFIX,
  ContainerLogManager,
  ContainerLogManagerOptionsError,
  DEFAULT_CONTAINER_LOG_MAX_FILES,
  DEFAULT_CONTAINER_LOG_MAX_SIZE,
  DEFAULT_LOG_MONITOR_PERIOD_MS,
  TMP_SUFFIX,
  filterUnusedLogs,
  formatRotationTimestamp,
  getAllLogs,
  type ContainerLogManagerOptions,
  type LogManager,
  type LogManagerRuntime,
} from './log-manager.js';
