export * from './types.js';
export {
  PodWorkers,
  calculateEffectiveGracePeriod,
  WORKER_RESYNC_INTERVAL_JITTER_FACTOR,
  WORKER_BACKOFF_PERIOD_JITTER_FACTOR,
  BACKOFF_ON_TRANSIENT_ERROR_PERIOD_MS,
  DEFAULT_BACKOFF_PERIOD_MS,
  DEFAULT_RESYNC_INTERVAL_MS,
  NETWORK_NOT_READY_ERROR_MSG,
  type PodWorkersOptions,
} from './pod-workers.js';
