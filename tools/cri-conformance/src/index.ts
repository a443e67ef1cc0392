export { criConformance, type CriTarget } from './suite.js';
export { readContainerdEnv, type ContainerdEnv } from './containerd-env.js';
export { removeRuntimePods } from './runtime-pods.js';
