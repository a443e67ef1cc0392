export type { ShutdownTrigger } from './trigger.js';
export { validateShutdownGracePeriods, type ShutdownGracePeriods } from './config.js';
export {
  NodeShutdownManager,
  NODE_SHUTDOWN_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_REASON,
  NODE_SHUTDOWN_REASON,
  NODE_SHUTTING_DOWN_ERROR,
  type KillPodFunc,
  type NodeShutdownManagerOptions,
  type PodShutdownGroup,
} from './manager.js';
export { DEFAULT_SHUTDOWN_SIGNAL, SignalShutdownTrigger, type SignalShutdownTriggerOptions } from './signal-trigger.js';
