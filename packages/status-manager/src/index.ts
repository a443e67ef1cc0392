export * from './generate.js';
export * from './status-util.js';
export * from './status-manager.js';
export * from './mirror-client.js';
export * from './events.js';
export { preparePodStatusPatch, podStatusPatchSchema, type PodStatusPatch } from './patch.js';
export { podStatusToJson } from './json.js';
export { type KubeClient } from './client.js';
