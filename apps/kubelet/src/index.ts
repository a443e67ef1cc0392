export { Kubelet, type KubeletOptions, type KubeletRuntime, type PodSource, type StatusManagerLike, type MirrorPods } from './kubelet.js';
export { Tokens, registerKubeletDeps, runtimeEndpoint } from './container.js';
export { startKubelet, describePodStatus, type RunningKubelet } from './app.js';
export { resolveConfig, loadConfigFile, parseManifestUrlHeaders, resolveNodeName, localRuntimePaths, ConfigError, KUBELET_CONFIG_API_VERSION, type KubeletConfig } from './config.js';
export { parseFlags, usage, FlagError, LOCAL_RUNTIME_ENDPOINT, KNOWN_FEATURE_GATES, type KubeletFlags } from './flags.js';
export { runOnce, type RunPodResult } from './run-once.js';
export { HealthzServer, type HealthzCheck } from './healthz.js';
export { PodManager } from './pod-manager.js';
export { KUBELET_VERSION } from './version.js';
