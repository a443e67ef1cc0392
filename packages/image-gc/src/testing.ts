// Test doubles for image GC, published as `@kubelet-ts/image-gc/testing`.
import type { ImageGCManager, ImageInfo } from './image-gc-manager.js';
import type { ImageFsStats, ImageFsStatsProvider } from './stats.js';

/** The recording EventRecorder, from `@kubelet-ts/core/testing`. */
export { RecordingEventRecorder, type RecordedEvent } from '@kubelet-ts/core/testing';

export type FakeImageGCMethod = 'garbageCollect' | 'deleteUnusedImages' | 'start' | 'stop';

/** An ImageGCManager that records calls; set `errors` to make a method reject. */
export class FakeImageGCManager implements ImageGCManager {
  readonly calls: FakeImageGCMethod[] = [];
  /** Errors to reject with, per method; each is used once unless `persistent`. */
  readonly errors = new Map<FakeImageGCMethod, Error>();
  persistentErrors = false;
  images: ImageInfo[] = [];
  started = false;

  async garbageCollect(_beganGC?: number): Promise<void> {
    this.calls.push('garbageCollect');
    this.fail('garbageCollect');
  }

  async deleteUnusedImages(): Promise<void> {
    this.calls.push('deleteUnusedImages');
    this.fail('deleteUnusedImages');
  }

  getImageList(): ImageInfo[] {
    return this.images.map((image) => ({ ...image }));
  }

  start(): void {
    this.calls.push('start');
    this.started = true;
  }

  async stop(): Promise<void> {
    this.calls.push('stop');
    this.started = false;
  }

  /** How many times a method was called. */
  count(method: FakeImageGCMethod): number {
    return this.calls.filter((call) => call === method).length;
  }

  private fail(method: FakeImageGCMethod): void {
    const err = this.errors.get(method);
    if (!err) return;
    if (!this.persistentErrors) this.errors.delete(method);
    throw err;
  }
}

/** An ImageFsStatsProvider answering whatever `stats` holds (or rejecting with `error`). */
export class FakeImageFsStatsProvider implements ImageFsStatsProvider {
  calls = 0;
  error: Error | undefined;

  constructor(public stats: ImageFsStats = { capacityBytes: 100, availableBytes: 100 }) {}

  /** Sets capacity and usage in percent of it (available = capacity * (100 - usagePercent) / 100). */
  setUsage(capacityBytes: number, usagePercent: number): void {
    this.stats = { capacityBytes, availableBytes: Math.round((capacityBytes * (100 - usagePercent)) / 100) };
  }

  async imageFsStats(): Promise<ImageFsStats> {
    this.calls++;
    if (this.error) throw this.error;
    return { ...this.stats };
  }
}
