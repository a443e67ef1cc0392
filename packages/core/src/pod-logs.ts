// Where the kubelet keeps container logs. The runtime manager writes there, container GC removes
// what is left of gone pods, and the stats provider measures it, so all three must agree.

/** The default root of the pod log directories (Go: --pod-logs-dir, KubeletConfiguration podLogsDir). */
export const DEFAULT_POD_LOGS_ROOT_DIRECTORY = '/var/log/pods';
