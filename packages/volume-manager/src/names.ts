// Where volumes live on disk and which of a pod's volumes count (Go: pkg/kubelet/kubelet_getters.go
// getPodVolumeDir, pkg/volume/util GetPodVolumeNames, utilstrings.EscapeQualifiedName).
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';

/** `kubernetes.io/configmap` -> `kubernetes.io~configmap` (Go: EscapeQualifiedName). */
export function escapePluginName(pluginName: string): string {
  return pluginName.replaceAll('/', '~');
}

/** `kubernetes.io~configmap` -> `kubernetes.io/configmap`. */
export function unescapePluginName(escaped: string): string {
  return escaped.replaceAll('~', '/');
}

export function podDir(podsDir: string, podUid: string): string {
  return join(podsDir, podUid);
}

export function podVolumesDir(podsDir: string, podUid: string): string {
  return join(podsDir, podUid, 'volumes');
}

/** `<podsDir>/<uid>/volumes/<escaped plugin>/<volume>` (Go: getPodVolumeDir). */
export function podVolumeDir(podsDir: string, podUid: string, pluginName: string, volumeName: string): string {
  return join(podsDir, podUid, 'volumes', escapePluginName(pluginName), volumeName);
}

/** `<podsDir>/<uid>/volume-subpaths` (Go: getPodVolumeSubpathsDir). */
export function podVolumeSubpathsDir(podsDir: string, podUid: string): string {
  return join(podsDir, podUid, 'volume-subpaths');
}

/** Go: GetUniqueVolumeNameFromSpecWithPod for volumes that are not attachable: `<plugin>/<uid>-<volume>`. */
export function uniquePodVolumeName(pluginName: string, podUid: string, volumeName: string): string {
  return `${pluginName}/${podUid}-${volumeName}`;
}

function podContainers(pod: V1Pod): Array<Pick<V1Container, 'volumeMounts' | 'volumeDevices'>> {
  const spec = pod.spec;
  if (!spec) return [];
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}

/**
 * The names of the volumes some container mounts (Go: GetPodVolumeNames); a volume no container uses
 * is neither set up nor waited for.
 */
export function podVolumeNamesInUse(pod: V1Pod): Set<string> {
  const names = new Set<string>();
  for (const container of podContainers(pod)) {
    for (const mount of container.volumeMounts ?? []) names.add(mount.name);
    for (const device of container.volumeDevices ?? []) names.add(device.name);
  }
  return names;
}
