// The kubelet's image garbage collector (Go: pkg/kubelet/images/image_gc_manager.go, plus the image GC
// loop of Kubelet.StartGarbageCollection).
import type { V1ObjectReference } from '@kubernetes/client-node';
import {
  errorText,
  formatDuration,
  KubeletEventReason,
  noopEventRecorder,
  defaultLogger,
  realClock,
  until,
  type Clock,
  type EventRecorder,
  type Logger,
} from '@kubelet-ts/core';
import type { ImageService, RuntimeService, runtimeapi } from '@kubelet-ts/cri-client';
import { imageGCPolicyWithDefaults, validateImageGCPolicy, type ImageGCPolicy } from './policy.js';
import { CriImageFsStatsProvider, type ImageFsStatsProvider } from './stats.js';

/** Go: ImageGCPeriod, how often the kubelet runs GarbageCollect. */
export const IMAGE_GC_PERIOD_MS = 5 * 60 * 1000;
/** Go: the detectImages loop period of realImageGCManager.Start. */
export const IMAGE_DETECT_PERIOD_MS = 5 * 60 * 1000;
/** Go: the image list cache refresh period of realImageGCManager.Start. */
export const IMAGE_LIST_PERIOD_MS = 30 * 1000;
/** What DeleteUnusedImages asks to free (Go: math.MaxInt64). */
export const FREE_ALL_BYTES = Number.MAX_SAFE_INTEGER;

/** What image GC knows about one image (Go: imageRecord). Times are ms since the epoch. */
export interface ImageRecord {
  id: string;
  /** When this manager first saw the image. */
  firstDetected: number;
  /** When a container (running or not) or the sandbox image last referenced it; 0 = never seen in use. */
  lastUsed: number;
  size: number;
  pinned: boolean;
  repoTags: string[];
  /** The runtime handler the image was pulled for (CRI Image.spec.runtimeHandler), '' for the default. */
  runtimeHandler: string;
}

/** An image as the node status reports it (Go: GetImageList), largest first. */
export interface ImageInfo {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  pinned: boolean;
}

/** Why an image was removed (Go: image_garbage_collected_total's reason label). */
export type ImageRemovalReason = 'age' | 'space';

export interface RemovedImage {
  id: string;
  size: number;
  reason: ImageRemovalReason;
}

/** Go: images.ImageGCManager. */
export interface ImageGCManager {
  /** Applies the policy once; rejects when it could not free enough space (Go: GarbageCollect). */
  garbageCollect(beganGC?: number): Promise<void>;
  /** Removes every unused, unpinned image older than minAge, whatever the disk usage (eviction). */
  deleteUnusedImages(): Promise<void>;
  /** The images of the last list, largest first (refreshed every 30 s once started). */
  getImageList(): ImageInfo[];
  /** Starts image detection, the image list refresh and the 5 min GC loop. Returns at once. */
  start(): void;
  /** Stops the loops and waits for a run in progress. */
  stop(): Promise<void>;
}

export interface RealImageGCManagerOptions {
  imageService: ImageService;
  /** Lists containers (all states) to find images in use. */
  runtimeService: RuntimeService;
  /** Missing fields take Go's defaults (85 / 80 / 2 min / 0). Validated by the constructor. */
  policy?: Partial<ImageGCPolicy>;
  /** The pod sandbox (pause) image: always treated as in use. */
  sandboxImage?: string;
  /** Where disk usage comes from. Default: CriImageFsStatsProvider over imageService and imageFsPath. */
  statsProvider?: ImageFsStatsProvider;
  /** Path to statfs for the default stats provider (default: the mountpoint CRI ImageFsInfo reports). */
  imageFsPath?: string;
  clock?: Clock;
  logger?: Logger;
  recorder?: EventRecorder;
  /** The object events are reported on (the kubelet passes core's `nodeReference(nodeName)`). Default: `{ kind: 'Node', name: '' }`. */
  nodeRef?: V1ObjectReference;
  /** Period of GarbageCollect in start(). Default 5 min (Go: ImageGCPeriod). */
  gcPeriodMs?: number;
  /** Period of image detection in start(). Default 5 min. */
  detectPeriodMs?: number;
  /** Period of the image list refresh in start(). Default 30 s. */
  imageListPeriodMs?: number;
  /** Called after each image removal (metrics, tests). */
  onImageRemoved?: (image: RemovedImage) => void;
}

type EvictionInfo = ImageRecord;

/** Go: realImageGCManager. */
export class RealImageGCManager implements ImageGCManager {
  readonly policy: Readonly<ImageGCPolicy>;
  private readonly imageService: ImageService;
  private readonly runtimeService: RuntimeService;
  private readonly sandboxImage: string;
  private readonly statsProvider: ImageFsStatsProvider;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly nodeRef: V1ObjectReference;
  private readonly gcPeriodMs: number;
  private readonly detectPeriodMs: number;
  private readonly imageListPeriodMs: number;
  private readonly onImageRemoved: ((image: RemovedImage) => void) | undefined;

  private readonly records = new Map<string, ImageRecord>();
  private imageCache: ImageInfo[] = [];
  /** Serializes detection and collection (Go: imageRecordsLock). */
  private tail: Promise<unknown> = Promise.resolve();
  private abort: AbortController | undefined;
  private loops: Promise<void>[] = [];
  private beganGC: number;
  private prevImageGCFailed = false;

  constructor(opts: RealImageGCManagerOptions) {
    const policy = imageGCPolicyWithDefaults(opts.policy);
    validateImageGCPolicy(policy);
    this.policy = Object.freeze(policy);
    this.imageService = opts.imageService;
    this.runtimeService = opts.runtimeService;
    this.sandboxImage = opts.sandboxImage ?? '';
    this.statsProvider = opts.statsProvider ?? new CriImageFsStatsProvider({ imageService: opts.imageService, imageFsPath: opts.imageFsPath });
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.nodeRef = opts.nodeRef ?? { kind: 'Node', name: '' };
    this.gcPeriodMs = opts.gcPeriodMs ?? IMAGE_GC_PERIOD_MS;
    this.detectPeriodMs = opts.detectPeriodMs ?? IMAGE_DETECT_PERIOD_MS;
    this.imageListPeriodMs = opts.imageListPeriodMs ?? IMAGE_LIST_PERIOD_MS;
    this.onImageRemoved = opts.onImageRemoved;
    this.beganGC = this.clock.now();
  }

  // ---------------------------------------------------------------------------------------------
  // Loops

  start(): void {
    if (this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    this.beganGC = this.clock.now();
    const loopOpts = (name: string) => ({ logger: this.logger, name });

    this.loops.push(
      until(
        async () => {
          try {
            await this.detectImages(this.clock.now(), signal);
          } catch (err) {
            if (!signal.aborted) this.logger.info('Failed to monitor images', { err: errorText(err) });
          }
        },
        this.detectPeriodMs,
        signal,
        this.clock,
        loopOpts('image-detect'),
      ),
      until(
        async () => {
          try {
            await this.refreshImageList(signal);
          } catch (err) {
            if (!signal.aborted) this.logger.info('Failed to update image list', { err: errorText(err) });
          }
        },
        this.imageListPeriodMs,
        signal,
        this.clock,
        loopOpts('image-list'),
      ),
    );

    // Go: when the high threshold is 100 and there is no max age, the kubelet never runs image GC.
    if (this.policy.highThresholdPercent === 100 && this.policy.maxAgeMs === 0) {
      this.logger.v(2).info('ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC');
      return;
    }
    this.loops.push(until(() => this.gcLoopOnce(signal), this.gcPeriodMs, signal, this.clock, loopOpts('image-gc')));
  }

  async stop(): Promise<void> {
    const abort = this.abort;
    if (!abort) return;
    abort.abort();
    const loops = this.loops;
    this.loops = [];
    await Promise.all(loops);
    await this.tail.catch(() => undefined);
    this.abort = undefined;
  }

  /** One round of the kubelet's image GC loop, with its logging and ImageGCFailed events. */
  private async gcLoopOnce(signal: AbortSignal): Promise<void> {
    try {
      await this.runGarbageCollect(this.beganGC, signal);
    } catch (err) {
      if (signal.aborted) return;
      if (this.prevImageGCFailed) {
        this.logger.error('Image garbage collection failed multiple times in a row', err);
        // Only create an event for repeated failures.
        this.recorder.event(this.nodeRef, 'Warning', KubeletEventReason.ImageGCFailed, errorText(err));
      } else {
        this.logger.error('Image garbage collection failed once. Stats initialization may not have completed yet', err);
      }
      this.prevImageGCFailed = true;
      return;
    }
    const level = this.prevImageGCFailed ? 1 : 4;
    this.prevImageGCFailed = false;
    this.logger.v(level).info('Image garbage collection succeeded');
  }

  // ---------------------------------------------------------------------------------------------
  // Public operations

  getImageList(): ImageInfo[] {
    return this.imageCache.map((image) => ({ ...image, repoTags: [...image.repoTags], repoDigests: [...image.repoDigests] }));
  }

  /** A snapshot of the image records (for inspection and tests), oldest lastUsed first. */
  imageRecords(): ImageRecord[] {
    return sortForEviction([...this.records.values()].map((r) => ({ ...r, repoTags: [...r.repoTags] })));
  }

  garbageCollect(beganGC: number = this.beganGC): Promise<void> {
    return this.runGarbageCollect(beganGC, this.abort?.signal);
  }

  deleteUnusedImages(): Promise<void> {
    return this.serialized(async () => {
      this.logger.info('Attempting to delete unused images');
      const freeTime = this.clock.now();
      const images = await this.imagesInEvictionOrderLocked(freeTime, this.abort?.signal);
      await this.freeSpaceLocked(FREE_ALL_BYTES, freeTime, images, this.abort?.signal);
    });
  }

  /** Runs image detection once (Go: detectImages), returning the ids of images in use. */
  detectImages(detectTime: number = this.clock.now(), signal?: AbortSignal): Promise<Set<string>> {
    return this.serialized(() => this.detectImagesLocked(detectTime, signal));
  }

  // ---------------------------------------------------------------------------------------------
  // Internals (the *Locked methods run inside serialized())

  private runGarbageCollect(beganGC: number, signal: AbortSignal | undefined): Promise<void> {
    return this.serialized(async () => {
      const freeTime = this.clock.now();
      let images = await this.imagesInEvictionOrderLocked(freeTime, signal);
      images = await this.freeOldImagesLocked(images, freeTime, beganGC, signal);

      // Disk usage on the filesystem holding images.
      const stats = await this.statsProvider.imageFsStats(signal);
      const capacity = Math.max(0, Math.trunc(stats.capacityBytes || 0));
      let available = Math.max(0, Math.trunc(stats.availableBytes || 0));
      if (available > capacity) {
        this.logger.info('Availability is larger than capacity', { available, capacity });
        available = capacity;
      }
      if (capacity === 0) {
        const err = new Error('invalid capacity 0 on image filesystem');
        this.recorder.event(this.nodeRef, 'Warning', KubeletEventReason.InvalidDiskCapacity, err.message);
        throw err;
      }

      // Over the high threshold: free enough to get down to the low threshold.
      const usagePercent = 100 - Math.trunc((available * 100) / capacity);
      if (usagePercent >= this.policy.highThresholdPercent) {
        const amountToFree = Math.trunc((capacity * (100 - this.policy.lowThresholdPercent)) / 100) - available;
        this.logger.info('Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold', {
          usage: usagePercent,
          highThreshold: this.policy.highThresholdPercent,
          amountToFree,
          lowThreshold: this.policy.lowThresholdPercent,
        });
        const freed = await this.freeSpaceLocked(amountToFree, freeTime, images, signal);
        if (freed < amountToFree) {
          const err = new Error(
            `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`,
          );
          this.recorder.event(this.nodeRef, 'Warning', KubeletEventReason.FreeDiskSpaceFailed, err.message);
          throw err;
        }
      }
    });
  }

  private async refreshImageList(signal?: AbortSignal): Promise<void> {
    const images = await this.imageService.listImages(undefined, { signal });
    this.setImageCache(images);
  }

  private setImageCache(images: runtimeapi.Image[]): void {
    // Sorted on write, largest first, as Go's imageCache.set (sliceutils.ByImageSize).
    this.imageCache = images
      .map((image) => ({
        id: image.id,
        repoTags: [...(image.repoTags ?? [])],
        repoDigests: [...(image.repoDigests ?? [])],
        size: Number(image.size ?? 0),
        pinned: Boolean(image.pinned),
      }))
      .sort((a, b) => b.size - a.size);
  }

  private async detectImagesLocked(detectTime: number, signal?: AbortSignal): Promise<Set<string>> {
    const imagesInUse = new Set<string>();

    // The sandbox image is always in use (Go 1.28's detectImages; later runtimes pin it).
    if (this.sandboxImage) {
      try {
        const status = await this.imageService.imageStatus({ image: this.sandboxImage }, false, { signal });
        if (status.image?.id) imagesInUse.add(status.image.id);
      } catch (err) {
        this.logger.v(4).info('Failed to resolve the sandbox image', { image: this.sandboxImage, err: errorText(err) });
      }
    }

    const images = await this.imageService.listImages(undefined, { signal });
    const containers = await this.runtimeService.listContainers(undefined, { signal });

    // Containers name their image by id (imageRef / imageId) or, on some runtimes, by a tag or digest.
    const idByRef = new Map<string, string>();
    for (const image of images) {
      idByRef.set(image.id, image.id);
      for (const tag of image.repoTags ?? []) if (!idByRef.has(tag)) idByRef.set(tag, image.id);
      for (const digest of image.repoDigests ?? []) if (!idByRef.has(digest)) idByRef.set(digest, image.id);
    }
    const verbose = this.logger.v(5);
    for (const container of containers) {
      for (const ref of [container.imageRef, container.imageId, container.image?.image]) {
        if (!ref) continue;
        const id = idByRef.get(ref);
        if (id !== undefined) imagesInUse.add(id);
      }
      if (verbose.enabled) {
        verbose.info('Container uses image', { containerID: container.id, containerImage: container.image?.image, imageID: container.imageRef });
      }
    }

    const now = this.clock.now();
    const current = new Set<string>();
    for (const image of images) {
      current.add(image.id);
      let record = this.records.get(image.id);
      if (!record) {
        if (verbose.enabled) verbose.info('Image ID is new', { imageID: image.id });
        record = { id: image.id, firstDetected: detectTime, lastUsed: 0, size: 0, pinned: false, repoTags: [], runtimeHandler: image.spec?.runtimeHandler ?? '' };
        this.records.set(image.id, record);
      }
      if (imagesInUse.has(image.id)) record.lastUsed = now;
      record.size = Number(image.size ?? 0);
      record.pinned = Boolean(image.pinned);
      record.repoTags = [...(image.repoTags ?? [])];
    }
    for (const id of this.records.keys()) {
      if (!current.has(id)) {
        if (verbose.enabled) verbose.info('Image ID is no longer present; removing from imageRecords', { imageID: id });
        this.records.delete(id);
      }
    }
    this.setImageCache(images);
    return imagesInUse;
  }

  /** Unused, unpinned images, least recently used first, ties broken by first detection. */
  private async imagesInEvictionOrderLocked(freeTime: number, signal?: AbortSignal): Promise<EvictionInfo[]> {
    const inUse = await this.detectImagesLocked(freeTime, signal);
    const verbose = this.logger.v(5);
    const images: EvictionInfo[] = [];
    for (const record of this.records.values()) {
      if (inUse.has(record.id)) {
        if (verbose.enabled) verbose.info('Image ID is being used', { imageID: record.id });
        continue;
      }
      if (record.pinned) {
        if (verbose.enabled) verbose.info('Image is pinned, skipping garbage collection', { imageID: record.id });
        continue;
      }
      images.push({ ...record });
    }
    return sortForEviction(images);
  }

  /** Go: freeOldImages. Removes images unused for longer than maxAge once the kubelet has run that long. */
  private async freeOldImagesLocked(images: EvictionInfo[], freeTime: number, beganGC: number, signal?: AbortSignal): Promise<EvictionInfo[]> {
    const maxAge = this.policy.maxAgeMs;
    if (maxAge === 0) return images;
    // Wait until MaxAge has passed since GC began, or we risk collecting images prematurely.
    if (freeTime - beganGC <= maxAge) return images;
    const errors: unknown[] = [];
    const remaining: EvictionInfo[] = [];
    for (const image of images) {
      // An image never seen in use counts from its first detection, so a fresh pull is not removed
      // before a container had a chance to use it.
      const unusedSince = Math.max(image.lastUsed, image.firstDetected);
      if (freeTime - unusedSince > maxAge) {
        try {
          await this.freeImage(image, 'age', signal);
        } catch (err) {
          errors.push(err);
          remaining.push(image);
        }
        continue;
      }
      remaining.push(image);
    }
    if (errors.length > 0) {
      throw new Error(`wanted to free images older than ${formatDuration(maxAge)}, encountered errors in image deletion: ${aggregate(errors)}`);
    }
    return remaining;
  }

  /** Go: freeSpace. Returns the bytes freed; rejects (after trying every candidate) if a removal failed. */
  private async freeSpaceLocked(bytesToFree: number, freeTime: number, images: EvictionInfo[], signal?: AbortSignal): Promise<number> {
    const errors: unknown[] = [];
    let spaceFreed = 0;
    const verbose = this.logger.v(5);
    for (const image of images) {
      // Images in use were given a newer lastUsed.
      if (image.lastUsed >= freeTime) {
        if (verbose.enabled) verbose.info('Image ID was used too recently, not eligible for garbage collection', { imageID: image.id, lastUsed: image.lastUsed, freeTime });
        continue;
      }
      // Not old enough: it may just have been pulled and be about to be used.
      if (freeTime - image.firstDetected < this.policy.minAgeMs) {
        if (verbose.enabled) {
          verbose.info("Image ID's age is less than the policy's minAge, not eligible for garbage collection", {
            imageID: image.id,
            age: formatDuration(freeTime - image.firstDetected),
            minAge: formatDuration(this.policy.minAgeMs),
          });
        }
        continue;
      }
      try {
        await this.freeImage(image, 'space', signal);
      } catch (err) {
        errors.push(err);
        continue;
      }
      spaceFreed += image.size;
      if (spaceFreed >= bytesToFree) break;
    }
    if (errors.length > 0) {
      throw new Error(`wanted to free ${bytesToFree} bytes, but freed ${spaceFreed} bytes space with errors in image deletion: ${aggregate(errors)}`);
    }
    return spaceFreed;
  }

  private async freeImage(image: EvictionInfo, reason: ImageRemovalReason, signal?: AbortSignal): Promise<void> {
    this.logger.info('Removing image to free bytes', { imageID: image.id, size: image.size, runtimeHandler: image.runtimeHandler, reason });
    const spec: runtimeapi.ImageSpecInit = { image: image.id };
    if (image.runtimeHandler) spec.runtimeHandler = image.runtimeHandler;
    try {
      await this.imageService.removeImage(spec, { signal });
    } catch (err) {
      this.logger.error('Failed to remove image', err, { imageID: image.id, size: image.size });
      throw err;
    }
    this.records.delete(image.id);
    this.imageCache = this.imageCache.filter((cached) => cached.id !== image.id);
    this.onImageRemoved?.({ id: image.id, size: image.size, reason });
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/** Go's byLastUsedAndDetected: least recently used first, ties broken by earlier first detection. */
export function sortForEviction<T extends { lastUsed: number; firstDetected: number }>(images: T[]): T[] {
  return images.sort((a, b) => (a.lastUsed === b.lastUsed ? a.firstDetected - b.firstDetected : a.lastUsed - b.lastUsed));
}

/** Go's utilerrors.NewAggregate(...).Error(). */
function aggregate(errors: unknown[]): string {
  const texts = [...new Set(errors.map(errorText))];
  return texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
}
