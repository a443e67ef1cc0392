// Probe port resolution (Go: probe.ResolveContainerPort / findPortByName): one implementation in core, shared with
// the lifecycle hooks of the runtime manager.
export { resolveContainerPort } from '@kubelet-ts/core';
