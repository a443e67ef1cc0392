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
export { EventedPLEG, type EventedPLEGOptions, type EventedPLEGMode, type EventedPLEGRuntime } from './evented.js';
