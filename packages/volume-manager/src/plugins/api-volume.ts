// What the configMap, secret, downwardAPI and projected plugins share (Go: the emptyDir they wrap
// through NewWrapperMounter, volumeutil.MakeNestedMountpoints, volume.SetVolumeOwnership,
// utilerrors.NewAggregate and the setupSuccess clean-up).
import * as nodeFs from 'node:fs/promises';
import { posix, relative, sep } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isNotExist } from '@kubelet-ts/core';
import { AtomicWriter, type AtomicWriterFs, type FileProjection } from '../atomic-writer.js';
import { nodeOwnershipFs, setVolumeOwnership, type OwnershipFs } from '../ownership.js';
import { VolumeSetupError, type MountedVolume, type VolumeContext, type VolumeHost } from '../types.js';
import { EmptyDirPlugin } from './empty-dir.js';

/** Changes a path's owner (uid or gid -1 leaves that id alone). */
export type ChownFunction = (path: string, uid: number, gid: number) => Promise<void>;

export interface ApiVolumePluginOptions {
  /** The chown of the fsGroup ownership change; default node's fs chown, which needs root. */
  chown?: ChownFunction;
  /** The atomic writer's file operations (tests simulate failures with it). */
  writerFs?: AtomicWriterFs;
  /** Names the writer's timestamped directories; default the wall clock. */
  now?: () => Date;
}

/** The API default of configMap/secret/downwardAPI/projected defaultMode (Go: SetDefaults_*VolumeSource). */
export const DEFAULT_MODE = 0o644;

/** Go: volume.Attributes of these plugins: read-only, managed, SELinux relabelling supported. */
export function mountedVolume(dir: string): MountedVolume {
  return { path: dir, readOnly: true, selinuxRelabel: true };
}

/** Go's utilerrors.NewAggregate(errs).Error(): one message as is, several deduplicated in brackets. */
export function aggregateErrors(errs: unknown[]): Error | undefined {
  if (errs.length === 0) return undefined;
  if (errs.length === 1) return errs[0] instanceof Error ? errs[0] : new Error(String(errs[0]));
  const messages = [...new Set(errs.map((e) => (e instanceof Error ? e.message : String(e))))];
  return new VolumeSetupError(messages.length === 1 ? messages[0] : `[${messages.join(', ')}]`);
}

export function podLogName(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/**
 * The directories to create in a volume for other volumes that containers mount beneath it, so the
 * runtime has a mount point for them (Go: getNestedMountpoints); relative to the volume's root.
 */
export function nestedMountpoints(volumeName: string, pod: V1Pod): string[] {
  const result: string[] = [];
  const containers: Array<Pick<V1Container, 'volumeMounts'>> = [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ];
  const clean = (p: string) => {
    const n = posix.normalize(p);
    return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
  };
  for (const container of containers) {
    const all = (container.volumeMounts ?? []).map((m) => clean(m.mountPath)).sort();
    const mine = (container.volumeMounts ?? []).filter((m) => m.name === volumeName).map((m) => clean(m.mountPath));
    for (const mountPoint of mine) {
      // A container must not get directories made outside of its volume.
      if (mountPoint.startsWith('../')) throw new VolumeSetupError(`invalid container mount point ${mountPoint}`);
      const prefix = `${mountPoint}/`;
      let previous = '';
      for (const mp of all) {
        if (!mp.startsWith(prefix)) continue;
        // Only the first level: for /dir/nested and /dir/nested/other only `nested` is made here.
        if (previous !== '' && mp.startsWith(previous)) continue;
        previous = `${mp}/`;
        result.push(mp.slice(prefix.length));
      }
    }
  }
  return result;
}

function ownershipFs(opts: ApiVolumePluginOptions): OwnershipFs {
  return opts.chown ? { ...nodeOwnershipFs, chown: opts.chown } : nodeOwnershipFs;
}

/**
 * Sets an API-content volume up at ctx.dir (Go: the plugins' SetUpAt once the payload is built):
 * the emptyDir underneath (on tmpfs for memory) unless it is already there, mount points for nested
 * volumes, the payload through the atomic writer, then fsGroup ownership. A first set-up that fails
 * is torn down again, as in Go; a refresh that fails leaves the previous contents to the running
 * containers (Go would remove them).
 */
export async function setUpApiVolume(
  ctx: VolumeContext,
  medium: 'disk' | 'memory',
  payload: Map<string, FileProjection>,
  opts: ApiVolumePluginOptions,
): Promise<MountedVolume> {
  const { dir, host, pod, volume } = ctx;
  const logger = host.logger;
  const fs = ownershipFs(opts);
  let written = true;
  try {
    await nodeFs.lstat(posix.join(dir, '..data'));
  } catch (err) {
    if (!isNotExist(err)) throw err;
    written = false;
  }

  // Go's wrapped emptyDir returns at once when ready; running it again would also re-add group
  // write to the files through its own (read-write) ownership pass.
  const ready = written && (medium === 'disk' || (await host.mounter.isMountPoint(dir)));
  if (!ready) {
    const wrapper = new EmptyDirPlugin({ ownershipFs: fs });
    try {
      await wrapper.setUp({ ...ctx, volume: { name: volume.name, emptyDir: medium === 'memory' ? { medium: 'Memory' } : {} } });
    } catch (err) {
      const what = medium === 'memory' ? 'mount tmpfs for' : 'create the directory of';
      throw new VolumeSetupError(`failed to ${what} volume ${JSON.stringify(volume.name)} of pod ${podLogName(pod)} at ${dir}: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  }

  try {
    for (const nested of nestedMountpoints(volume.name, pod)) {
      try {
        await nodeFs.mkdir(posix.join(dir, nested), { recursive: true, mode: 0o755 });
      } catch (err) {
        throw new VolumeSetupError(`unable to create nested volume mountpoints: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const writer = new AtomicWriter(dir, {
      fs: opts.writerFs,
      now: opts.now,
      logger,
      logContext: `pod ${podLogName(pod)} volume ${volume.name}`,
    });
    if (await writer.write(payload)) logger.v(3).info('Wrote volume contents', { pod: podLogName(pod), volume: volume.name, dir });
    await setVolumeOwnership(dir, { fsGroup: ctx.fsGroup, readOnly: true, fs, logger, clock: host.clock });
  } catch (err) {
    if (!written) {
      await tearDownApiVolume(dir, host).catch((tearDownErr: unknown) => {
        logger.error('Error tearing down volume after a failed set-up', tearDownErr, { volume: volume.name, dir });
      });
    }
    throw err;
  }
  return mountedVolume(dir);
}

/** Go: UnmountViaEmptyDir: unmounts what is mounted at or below dir, then removes dir. */
export function tearDownApiVolume(dir: string, host: VolumeHost): Promise<void> {
  return new EmptyDirPlugin().tearDown(dir, host);
}

/** The pod UID of a volume directory `<podsDir>/<uid>/volumes/<plugin>/<volume>`, if dir has that shape. */
export function podUidOfVolumeDir(podsDir: string, dir: string): string | undefined {
  const parts = relative(podsDir, dir).split(sep);
  return parts.length === 4 && parts[1] === 'volumes' && parts[0] !== '..' ? parts[0] : undefined;
}
