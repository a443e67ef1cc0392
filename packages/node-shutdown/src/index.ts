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
export {
  DBUS_RECONNECT_PERIOD_MS,
  FirstAvailableShutdownTrigger,
  INHIBIT_WHO,
  INHIBIT_WHY,
  KUBELET_LOGIND_CONF,
  LOGIND_CONFIG_DIRECTORY,
  LogindShutdownTrigger,
  SystemdInhibitLock,
  type InhibitLock,
  type LogindShutdownTriggerOptions,
} from './logind.js';
/** The D-Bus client, moved to @kubelet-ts/core; re-exported here as before. */
export { DBusConnection, DBusError, MessageType, busSocketPath, decodeMessage, encodeMessage, splitSignature, messageLength, systemBusAddress, type DBusMessage, type DBusValue, type DBusVariant, type MethodCall } from '@kubelet-ts/core';
export { defaultShutdownTrigger } from './default-trigger.js';
