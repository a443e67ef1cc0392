export { Kubectl, KubectlError, adminWireServer, type KubeObject, clusterRoot, ensureCluster, nodeKubeconfig, readClusterEnv, repoRoot, restartComponent, type ClusterEnv } from './cluster.js';
export { KubeletProcess, ourCgroupRoot, type NodeAgentOptions } from './kubelet-process.js';
export { unmountAndRemove } from './node-cleanup.js';
export { waitFor } from './wait.js';
export { wire, watchEvents, type WireResponse, type WireServer } from './wire.js';
export { kubeletRequests, normalize, watchFromTooOld, type Outcome } from './kubelet-requests.js';
export * from './volume-workloads.js';
export { BOOTSTRAP_GROUP, createBootstrapToken, writeBootstrapKubeconfig } from './bootstrap-token.js';
export * from './csi-workloads.js';
