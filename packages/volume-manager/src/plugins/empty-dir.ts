// kubernetes.io/empty-dir (Go: pkg/volume/emptydir/empty_dir.go): a directory in the pod's volume
// dir, or a tmpfs mounted there for medium Memory.
import { promises as fsp } from 'node:fs';
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { quantityValue } from '@kubelet-ts/core';
import { setVolumeOwnership, type OwnershipFs } from '../ownership.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../types.js';
import { goPathError } from './host-path.js';

export const EMPTY_DIR_PLUGIN_NAME = 'kubernetes.io/empty-dir';

/** Go's defaultPerm: anyone in the pod may write, whatever user its containers run as. */
const DEFAULT_PERM = 0o777;

const isHugePageMedium = (medium: string): boolean => medium === 'HugePages' || medium.startsWith('HugePages-');

function parseBytes(what: string, value: string | number): number {
  try {
    return quantityValue(value);
  } catch (err) {
    throw new Error(`invalid ${what} ${JSON.stringify(value)}: ${(err as Error).message}`, { cause: err });
  }
}

/** Sum of the app containers' memory limits, raised to any init container's; undefined when one has none. */
function podMemoryLimitBytes(pod: V1Pod): number | undefined {
  const limitOf = (c: V1Container): number => parseBytes('memory limit', c.resources?.limits?.memory ?? 0);
  const containers = pod.spec?.containers ?? [];
  if (containers.length === 0) return undefined;
  let total = 0;
  for (const c of containers) {
    const limit = limitOf(c);
    // As Go's ResourceConfigForPod: without a limit on every app container the pod has no memory limit.
    if (limit <= 0) return undefined;
    total += limit;
  }
  for (const c of pod.spec?.initContainers ?? []) total = Math.max(total, limitOf(c));
  const overhead = pod.spec?.overhead?.memory;
  if (overhead !== undefined) total += parseBytes('pod overhead', overhead);
  return total;
}

/**
 * The tmpfs size for a Memory emptyDir (Go: calculateEmptyDirMemorySize with SizeMemoryBackedVolumes
 * on): node allocatable memory, lowered to the pod's memory limit, lowered to the volume's
 * sizeLimit. Undefined leaves the kernel's default (half of RAM).
 */
export function emptyDirMemorySizeBytes(pod: V1Pod, volume: V1Volume, nodeAllocatableMemoryBytes: number): number | undefined {
  // An unknown allocatable (0) must not cap everything at zero.
  let size = nodeAllocatableMemoryBytes > 0 ? nodeAllocatableMemoryBytes : Infinity;
  const podLimit = podMemoryLimitBytes(pod);
  if (podLimit !== undefined && podLimit > 0 && podLimit <= size) size = podLimit;
  const sizeLimit = volume.emptyDir?.sizeLimit;
  if (sizeLimit !== undefined && sizeLimit !== null && sizeLimit !== '') {
    const bytes = parseBytes('emptyDir sizeLimit', sizeLimit);
    if (bytes > 0 && bytes <= size) size = bytes;
  }
  return Number.isFinite(size) ? size : undefined;
}

export interface EmptyDirPluginOptions {
  /** For tests: the file operations of the fsGroup ownership change (chown needs root). */
  ownershipFs?: OwnershipFs;
}

export class EmptyDirPlugin implements VolumePlugin {
  readonly name = EMPTY_DIR_PLUGIN_NAME;
  readonly requiresRemount = false;
  private readonly ownershipFs?: OwnershipFs;

  constructor(opts: EmptyDirPluginOptions = {}) {
    this.ownershipFs = opts.ownershipFs;
  }

  canSupport(volume: V1Volume): boolean {
    return volume.emptyDir !== undefined && volume.emptyDir !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const medium = ctx.volume.emptyDir?.medium ?? '';
    if (medium === '') {
      await setupDir(ctx.dir);
    } else if (medium === 'Memory') {
      await this.setupTmpfs(ctx);
    } else if (isHugePageMedium(medium)) {
      throw new Error(`emptyDir medium ${JSON.stringify(medium)} (hugetlbfs) is not supported by this kubelet`);
    } else {
      throw new Error(`unknown storage medium ${JSON.stringify(medium)}`);
    }

    // Go ignores the outcome and always changes recursively (no fsGroupChangePolicy) for emptyDir.
    try {
      await setVolumeOwnership(ctx.dir, {
        fsGroup: ctx.fsGroup,
        readOnly: false,
        logger: ctx.host.logger,
        clock: ctx.host.clock,
        ...(this.ownershipFs ? { fs: this.ownershipFs } : {}),
      });
    } catch (err) {
      ctx.host.logger.error('Setting volume ownership failed', err, { path: ctx.dir, fsGroup: ctx.fsGroup });
    }
    return { path: ctx.dir, readOnly: false, selinuxRelabel: true };
  }

  private async setupTmpfs(ctx: VolumeContext): Promise<void> {
    await setupDir(ctx.dir);
    // Already mounted (a retry, or a kubelet restart with the pod still running): the tmpfs holds
    // the pod's data, so it is kept rather than mounted over.
    if (await ctx.host.mounter.isMountPoint(ctx.dir)) return;
    const sizeBytes = emptyDirMemorySizeBytes(ctx.pod, ctx.volume, ctx.host.node.allocatableMemoryBytes);
    ctx.host.logger.v(3).info('Mounting tmpfs for volume', { pod: ctx.pod.metadata?.uid, volume: ctx.volume.name, sizeBytes });
    await ctx.host.mounter.mountTmpfs(ctx.dir, sizeBytes !== undefined ? { sizeBytes } : {});
  }

  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    try {
      const info = await fsp.lstat(dir);
      if (!info.isDirectory()) {
        await fsp.unlink(dir);
        return;
      }
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ENOENT') {
        host.logger.warn('Unmount skipped because path does not exist', { path: dir });
        return;
      }
      throw goPathError(err);
    }
    // Unmount whatever is mounted at or below dir first: removing through a mount would delete
    // files on another filesystem.
    for (const target of await host.mounter.mountPointsUnder(dir)) await host.mounter.unmount(target);
    const left = await host.mounter.mountPointsUnder(dir);
    if (left.length > 0) throw new Error(`cannot remove volume directory ${dir}: ${left[0]} is still mounted`);
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/** Go's setupDir: MkdirAll with 0777, then chmod when the umask took bits away. */
async function setupDir(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true, mode: DEFAULT_PERM });
    const info = await fsp.lstat(dir);
    if ((info.mode & 0o777) !== DEFAULT_PERM) await fsp.chmod(dir, DEFAULT_PERM);
  } catch (err) {
    throw goPathError(err);
  }
}
