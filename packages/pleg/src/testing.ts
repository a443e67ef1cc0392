// Test doubles for the PLEG, published as `@kubelet-ts/pleg/testing`.
import type { PodLifecycleEvent, RuntimePod } from '@kubelet-ts/core';
import { EventChannel } from './event-channel.js';
import { PLEG_CHANNEL_CAPACITY, type PlegHealth, type PodLifecycleEventGenerator, type UpdateCacheResult, type WatchOptions } from './types.js';

/**
 * A PodLifecycleEventGenerator driven by hand: push() events, set the health answer, and check
 * which calls the code under test made. Its channel is bounded like the real one.
 */
export class FakePLEG implements PodLifecycleEventGenerator {
  readonly eventChannel: EventChannel<PodLifecycleEvent>;
  /** What healthy() answers. */
  health: PlegHealth = { healthy: true };
  /** What updateCache() answers; default { updated: true }. */
  updateCacheResult: UpdateCacheResult = { updated: true };
  started = false;
  startCalls = 0;
  stopCalls = 0;
  relistCalls = 0;
  readonly updateCacheCalls: { pod: RuntimePod | undefined; uid: string }[] = [];
  /** Runs on each relist() call, e.g. to push the events a relist would find. */
  onRelist?: () => void | Promise<void>;

  constructor(opts: { channelCapacity?: number } = {}) {
    this.eventChannel = new EventChannel<PodLifecycleEvent>(opts.channelCapacity ?? PLEG_CHANNEL_CAPACITY);
  }

  /** Emits events as the PLEG would; returns false for each one dropped by a full channel. */
  push(...events: PodLifecycleEvent[]): boolean {
    let all = true;
    for (const event of events) all = this.eventChannel.push(event) && all;
    return all;
  }

  setHealthy(healthy: boolean, error?: Error): void {
    this.health = healthy ? { healthy } : { healthy, error: error ?? new Error('pleg is not healthy') };
  }

  start(): void {
    this.started = true;
    this.startCalls++;
  }

  async stop(): Promise<void> {
    this.started = false;
    this.stopCalls++;
  }

  watch(options: WatchOptions = {}): AsyncIterable<PodLifecycleEvent> {
    return this.eventChannel.iterate(options.signal);
  }

  healthy(): PlegHealth {
    return this.health;
  }

  async relist(): Promise<void> {
    this.relistCalls++;
    await this.onRelist?.();
  }

  async updateCache(pod: RuntimePod | undefined, uid: string): Promise<UpdateCacheResult> {
    this.updateCacheCalls.push({ pod, uid });
    return this.updateCacheResult;
  }

  get droppedEvents(): number {
    return this.eventChannel.dropped;
  }

  /** Ends every watch() iteration (after draining). */
  close(): void {
    this.eventChannel.close();
  }
}

export { EventChannel };
