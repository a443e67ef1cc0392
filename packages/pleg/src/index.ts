export * from './types.js';
export { EventChannel } from './event-channel.js';
export {
  GenericPLEG,
  convertState,
  generateEvents,
  computePodEvents,
  computeEventsFromStates,
  containerStateList,
  preservePodIPs,
  type GenericPLEGOptions,
  type PlegContainerState,
  type ContainerStateList,
  type RelistDuration,
} from './generic.js';
export { EventedPLEG, type EventedPLEGOptions, type EventedPLEGMode } from './evented.js';
export {
  podStatusFromEvent,
  toContainerStatus,
  toContainerState,
  toSandboxStatus,
  sandboxIPs,
  nanosToMs,
  KubernetesContainerNameLabel,
  ContainerHashAnnotation,
  ContainerRestartCountAnnotation,
} from './cri-convert.js';
