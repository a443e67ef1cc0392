// A container's mounts from its volumeMounts and the pod's set-up volumes (Go: makeMounts in
// pkg/kubelet/kubelet_pods.go), in a runtime-neutral shape the kubelet turns into CRI mounts.
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import { expandSubPathExpr, prepareSubPath } from './subpath.js';
import type { MountedVolume } from './types.js';

export type MountPropagation = 'Private' | 'HostToContainer' | 'Bidirectional';

export interface ContainerMount {
  /** volumeMount.name. */
  name: string;
  containerPath: string;
  hostPath: string;
  readOnly: boolean;
  selinuxRelabel: boolean;
  propagation: MountPropagation;
}

export interface MakeMountsOptions {
  /** The container's environment, for subPathExpr. */
  env?: ReadonlyMap<string, string>;
  logger?: Logger;
}

/** Go: translateMountPropagation. */
export function translateMountPropagation(mode: string | undefined): MountPropagation {
  switch (mode) {
    case undefined:
    case 'None':
      return 'Private';
    case 'HostToContainer':
      return 'HostToContainer';
    case 'Bidirectional':
      return 'Bidirectional';
    default:
      throw new Error(`invalid MountPropagation mode: ${JSON.stringify(mode)}`);
  }
}

/**
 * The mounts of one container. A volumeMount naming a volume that is not set up fails with Go's
 * `cannot find volume "x" to mount into container "c"`; subPath problems fail with Go's messages.
 */
export async function makeMounts(pod: V1Pod, container: V1Container, volumes: ReadonlyMap<string, MountedVolume>, opts: MakeMountsOptions = {}): Promise<ContainerMount[]> {
  const logger = opts.logger ?? defaultLogger;
  const mounts: ContainerMount[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume) {
      logger.error('Mount cannot be satisfied for the container, because the volume is missing', undefined, {
        pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`,
        containerName: container.name,
        volumeMountName: mount.name,
      });
      throw new Error(`cannot find volume ${JSON.stringify(mount.name)} to mount into container ${JSON.stringify(container.name)}`);
    }
    let subPath = mount.subPath ?? '';
    if (mount.subPathExpr) subPath = expandSubPathExpr(mount.subPathExpr, opts.env ?? new Map());
    const hostPath = subPath
      ? await prepareSubPath({ volumePath: volume.path, subPath, volumeMountName: mount.name, containerName: container.name, logger })
      : volume.path;
    const containerPath = path.isAbsolute(mount.mountPath) ? mount.mountPath : `/${mount.mountPath}`;
    mounts.push({
      name: mount.name,
      containerPath,
      hostPath,
      readOnly: mount.readOnly === true || volume.readOnly,
      selinuxRelabel: volume.selinuxRelabel,
      propagation: translateMountPropagation(mount.mountPropagation),
    });
  }
  return mounts;
}
