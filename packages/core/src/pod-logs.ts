// Where the kubelet keeps container logs. The runtime manager writes there, container GC removes
// what is left of gone pods, and the stats provider measures it, so all three must agree.
import { join as joinPath } from 'node:path';

/** The default root of the pod log directories (Go: --pod-logs-dir, KubeletConfiguration podLogsDir). */
export const DEFAULT_POD_LOGS_ROOT_DIRECTORY = '/var/log/pods';

/** `<root>/<namespace>_<name>_<uid>` (Go: BuildPodLogsDirectory). */
export function buildPodLogsDirectory(podLogsRoot: string, podNamespace: string, podName: string, podUid: string): string {
  return joinPath(podLogsRoot, `${podNamespace}_${podName}_${podUid}`);
}

/** `<root>/<namespace>_<name>_<uid>/<container>` (Go: BuildContainerLogsDirectory). */
export function buildContainerLogsDirectory(
  podLogsRoot: string,
  podNamespace: string,
  podName: string,
  podUid: string,
  containerName: string,
): string {
  return joinPath(buildPodLogsDirectory(podLogsRoot, podNamespace, podName, podUid), containerName);
}
