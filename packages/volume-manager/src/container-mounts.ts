// A container's mounts from its volumeMounts and the pod's set-up volumes (Go: makeMounts in
// pkg/kubelet/kubelet_pods.go), in a runtime-neutral shape the kubelet turns into CRI mounts.
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import { expandSubPathExpr, prepareSubPath } from './subpath.js';
import type { Mounter, MountedVolume } from './types.js';

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
  /**
   * `<podsDir>/<uid>`, where subPaths are bind-mounted (`volume-subpaths/`). With `mounter`, required for
   * a volumeMount with a subPath: without them such a mount is refused rather than handed over unsafely.
   */
  podDir?: string;
  /** Bind-mounts subPaths (Go: the subpather's mounter). */
  mounter?: Mounter;
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
 * `cannot find volume "x" to mount into container "c"`; subPath problems fail with Go's messages. A
 * subPath's host path is its bind mount under `<podDir>/volume-subpaths/` (see prepareSubPath).
 */
export async function makeMounts(pod: V1Pod, container: V1Container, volumes: ReadonlyMap<string, MountedVolume>, opts: MakeMountsOptions = {}): Promise<ContainerMount[]> {
  const logger = opts.logger ?? defaultLogger;
  const mounts: ContainerMount[] = [];
  for (const [index, mount] of (container.volumeMounts ?? []).entries()) {
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
    let hostPath = volume.path;
    if (subPath) {
      if (opts.podDir === undefined || opts.mounter === undefined) {
        throw new Error(
          `cannot mount subPath of volumeMount ${JSON.stringify(mount.name)} of container ${JSON.stringify(container.name)}: ` +
            'makeMounts needs the pod directory and a mounter to bind-mount it safely',
        );
      }
      hostPath = await prepareSubPath({
        volumePath: volume.path,
        subPath,
        volumeMountName: mount.name,
        containerName: container.name,
        bind: { podDir: opts.podDir, volumeName: mount.name, volumeMountIndex: index, mounter: opts.mounter },
        logger,
      });
    }
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
