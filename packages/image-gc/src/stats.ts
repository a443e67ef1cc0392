// Image filesystem stats for image GC (Go: StatsProvider.ImageFsStats, which the kubelet answers from
// CRI ImageFsInfo for usage and cAdvisor's statfs of the image filesystem's mountpoint for capacity).
import { statfs as nodeStatfs } from 'node:fs/promises';
import type { ImageService } from '@kubelet-ts/cri-client';
import { errorText } from '@kubelet-ts/core';

export interface ImageFsStats {
  /** Size of the filesystem holding images, in bytes. 0 means unknown and fails GC (InvalidDiskCapacity). */
  capacityBytes: number;
  /** Bytes free for unprivileged use on that filesystem. */
  availableBytes: number;
  /** Bytes used by images as the runtime reports them (CRI ImageFsInfo), when known. */
  usedBytes?: number;
  /** Where the statistics were taken. */
  mountpoint?: string;
}

/** Go: images.StatsProvider. */
export interface ImageFsStatsProvider {
  imageFsStats(signal?: AbortSignal): Promise<ImageFsStats>;
}

/** The statfs(2) fields used here (node's fs.promises.statfs returns them). */
export interface StatfsResult {
  bsize: number;
  blocks: number;
  bavail: number;
}

export type StatfsFunction = (path: string) => Promise<StatfsResult>;

export interface CriImageFsStatsProviderOptions {
  imageService: ImageService;
  /**
   * The image filesystem path to statfs. Default: the mountpoint CRI ImageFsInfo reports. When
   * ImageFsInfo fails, stats still come from statfs of this path (the fallback).
   */
  imageFsPath?: string;
  /**
   * A fixed capacity instead of statfs: available = capacityBytes - CRI usedBytes. For runtimes whose
   * image store is a quota rather than a filesystem (and for tests).
   */
  capacityBytes?: number;
  /** Default: node's fs.promises.statfs. */
  statfs?: StatfsFunction;
}

/**
 * ImageFsStats from CRI ImageFsInfo (used bytes, mountpoint) and statfs of the image filesystem
 * (capacity, available), falling back to statfs of `imageFsPath` when the runtime cannot answer.
 */
export class CriImageFsStatsProvider implements ImageFsStatsProvider {
  private readonly imageService: ImageService;
  private readonly imageFsPath: string | undefined;
  private readonly capacityBytes: number | undefined;
  private readonly statfs: StatfsFunction;

  constructor(opts: CriImageFsStatsProviderOptions) {
    this.imageService = opts.imageService;
    this.imageFsPath = opts.imageFsPath;
    this.capacityBytes = opts.capacityBytes;
    this.statfs = opts.statfs ?? ((path) => nodeStatfs(path));
  }

  async imageFsStats(signal?: AbortSignal): Promise<ImageFsStats> {
    let usedBytes: number | undefined;
    let mountpoint: string | undefined;
    let criError: unknown;
    try {
      const info = await this.imageService.imageFsInfo({ signal });
      const fs = info.imageFilesystems[0];
      if (fs) {
        mountpoint = fs.fsId?.mountpoint || undefined;
        usedBytes = fs.usedBytes?.value ?? undefined;
      } else {
        criError = new Error('the runtime reported no image filesystem');
      }
    } catch (err) {
      criError = err;
    }

    if (this.capacityBytes !== undefined) {
      if (usedBytes === undefined) throw new Error(`failed to get imageFs info: ${errorText(criError)}`);
      return { capacityBytes: this.capacityBytes, availableBytes: Math.max(0, this.capacityBytes - usedBytes), usedBytes, mountpoint };
    }

    const path = this.imageFsPath ?? mountpoint;
    if (!path) throw new Error(`failed to get imageFs info: ${errorText(criError)}`);
    let st: StatfsResult;
    try {
      st = await this.statfs(path);
    } catch (err) {
      throw new Error(`failed to get imageFs info: statfs ${JSON.stringify(path)}: ${errorText(err)}`);
    }
    return {
      capacityBytes: Number(st.blocks) * Number(st.bsize),
      availableBytes: Number(st.bavail) * Number(st.bsize),
      usedBytes,
      mountpoint: path,
    };
  }
}

