// Raw block volumes as the devices of a container (Go: kubelet_pods.go makeBlockVolumes): each
// `volumeDevices` entry of a container becomes a CRI Device of the block device its volume's plugin mapped.
import { isAbsolute } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import type { MountedVolume } from './types.js';

/** A device for the CRI container config (Go: kubecontainer.DeviceInfo). */
export interface ContainerDevice {
  /** `volumeDevices[].devicePath`. */
  containerPath: string;
  /** The device node the volume's plugin mapped (`MountedVolume.devicePath`). */
  hostPath: string;
  /** `mrw`, or `r` for a read-only volume (a claim referenced with `readOnly: true`), as Go sets them. */
  permissions: 'mrw' | 'r';
}

/**
 * The devices of a container's `volumeDevices` from the pod's set-up volumes (`getMountedVolumesForPod`).
 * Throws with Go's messages: `error DevicePath \`x\` must be an absolute path`, `cannot find volume "v" to
 * pass into container "c"` (a volume that is not set up, or that the plugin mapped no device for).
 * Unlike Go, the device node is not checked to exist here: the runtime fails the container if it is gone.
 */
export function makeDevices(
  pod: V1Pod,
  container: Pick<V1Container, 'name' | 'volumeDevices'>,
  mountedVolumes: ReadonlyMap<string, MountedVolume>,
  logger: Logger = defaultLogger,
): ContainerDevice[] {
  const devices: ContainerDevice[] = [];
  for (const device of container.volumeDevices ?? []) {
    if (!isAbsolute(device.devicePath)) throw new Error(`error DevicePath \`${device.devicePath}\` must be an absolute path`);
    const volume = mountedVolumes.get(device.name);
    if (!volume?.devicePath) {
      logger.error('Block volume cannot be satisfied for container, because the volume is missing or the volume mapper is nil', undefined, {
        pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`,
        containerName: container.name,
        device: device.name,
      });
      throw new Error(`cannot find volume ${JSON.stringify(device.name)} to pass into container ${JSON.stringify(container.name)}`);
    }
    logger.v(4).info('Device will be attached to container in the corresponding path on host', { containerName: container.name, path: volume.devicePath });
    devices.push({ containerPath: device.devicePath, hostPath: volume.devicePath, permissions: volume.readOnly ? 'r' : 'mrw' });
  }
  return devices;
}
