// How the kubelet hands the volume manager's work to the runtime manager: container mounts as CRI mounts,
// configMap and secret values for the environment, and image pull secrets (Go: makeMounts,
// makeEnvironmentVariables and getPullSecretsForPod over the secret and configMap managers).
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import { isNotFound, type Logger } from '@kubelet-ts/core';
import { runtimeapi } from '@kubelet-ts/cri-client';
import type { ConfigMapAndSecretSource, DeviceRunContainerOptions } from '@kubelet-ts/runtime-manager';
import { configMapNamesOf, makeDevices, makeMounts, secretNamesOf, type ConfigMapGetter, type ContainerMount, type MountedVolume, type SecretGetter } from '@kubelet-ts/volume-manager';

const CRI_PROPAGATION: Record<ContainerMount['propagation'], runtimeapi.MountPropagation> = {
  Private: runtimeapi.MountPropagation.PROPAGATION_PRIVATE,
  HostToContainer: runtimeapi.MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
  Bidirectional: runtimeapi.MountPropagation.PROPAGATION_BIDIRECTIONAL,
};

/** What criMountsFor needs of the volume manager. */
export interface ContainerMountSource {
  getMountedVolumesForPod(podUid: string): ReadonlyMap<string, MountedVolume>;
  /**
   * The container's mounts with subPaths bind-mounted under the pod's `volume-subpaths/` (the volume
   * manager's). Without it a volumeMount with a subPath is refused, never handed over by its path.
   */
  getContainerMounts?(pod: V1Pod, container: V1Container, env?: ReadonlyMap<string, string>): Promise<ContainerMount[]>;
}

/**
 * The CRI mounts of a container from its pod's set-up volumes; none without a volume manager. A
 * subPath's host path is its bind mount of the opened subPath (Go: PrepareSafeSubpath), so a symlink
 * swapped into the volume after the checks cannot redirect the runtime.
 */
export async function criMountsFor(
  volumes: ContainerMountSource | undefined,
  pod: V1Pod,
  container: V1Container,
  env: ReadonlyMap<string, string>,
): Promise<runtimeapi.MountInit[]> {
  if (!volumes || !container.volumeMounts?.length) return [];
  const mounts = volumes.getContainerMounts
    ? await volumes.getContainerMounts(pod, container, env)
    : await makeMounts(pod, container, volumes.getMountedVolumesForPod(pod.metadata?.uid ?? ''), { env });
  return mounts.map((m) => ({
    containerPath: m.containerPath,
    hostPath: m.hostPath,
    readonly: m.readOnly,
    selinuxRelabel: m.selinuxRelabel,
    propagation: CRI_PROPAGATION[m.propagation],
  }));
}

/**
 * The device plugins' run options plus the container's raw block volumes (`volumeDevices`) as CRI devices of
 * the block devices their plugins mapped, after the plugins' devices (Go: GenerateRunContainerOptions with
 * makeBlockVolumes). A volume device that is not set up fails the container (CreateContainerConfigError).
 */
export function withBlockVolumeDevices(
  options: DeviceRunContainerOptions | undefined,
  volumes: Pick<ContainerMountSource, 'getMountedVolumesForPod'> | undefined,
  pod: V1Pod,
  container: V1Container,
  logger: Logger,
): DeviceRunContainerOptions | undefined {
  if (!volumes || !container.volumeDevices?.length) return options;
  const blockDevices = makeDevices(pod, container, volumes.getMountedVolumesForPod(pod.metadata?.uid ?? ''), logger);
  const base = options ?? { envs: [], mounts: [], devices: [], annotations: [] };
  return {
    ...base,
    devices: [...base.devices, ...blockDevices.map((d) => ({ pathOnHost: d.hostPath, pathInContainer: d.containerPath, permissions: d.permissions }))],
  };
}

/** configMapKeyRef/secretKeyRef/envFrom values from the watch-based managers; a missing object is `undefined`. */
export function configMapAndSecretSource(configMaps: ConfigMapGetter | undefined, secrets: SecretGetter | undefined): ConfigMapAndSecretSource | undefined {
  if (!configMaps || !secrets) return undefined;
  const orUndefined = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    async getConfigMap(namespace, name) {
      const configMap = await orUndefined(() => configMaps.getConfigMap(namespace, name));
      return configMap && { ...(configMap.data ?? {}) };
    },
    async getSecret(namespace, name) {
      const secret = await orUndefined(() => secrets.getSecret(namespace, name));
      if (!secret) return undefined;
      const decoded: Record<string, string> = {};
      for (const [key, value] of Object.entries(secret.data ?? {})) decoded[key] = Buffer.from(value, 'base64').toString('utf8');
      return decoded;
    },
  };
}

/** Go: getPullSecretsForPod: the pod's imagePullSecrets that can be read; the others are logged and skipped. */
export function pullSecretsFor(secrets: SecretGetter | undefined, logger: Logger): ((pod: V1Pod) => Promise<V1Secret[]>) | undefined {
  if (!secrets) return undefined;
  return async (pod) => {
    const found: V1Secret[] = [];
    for (const ref of pod.spec?.imagePullSecrets ?? []) {
      if (!ref.name) continue;
      try {
        found.push(await secrets.getSecret(pod.metadata?.namespace ?? '', ref.name));
      } catch (err) {
        logger.info('Unable to retrieve pull secret, the image pull may not succeed.', { pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, secret: ref.name, err: (err as Error).message });
      }
    }
    return found;
  };
}

/** Whether the pod references the configMap or secret (in any of the places Go's managers look). */
export function referencesObject(pod: V1Pod, kind: 'configmap' | 'secret', namespace: string, name: string): boolean {
  if ((pod.metadata?.namespace ?? '') !== namespace) return false;
  return (kind === 'configmap' ? configMapNamesOf(pod) : secretNamesOf(pod)).has(name);
}
