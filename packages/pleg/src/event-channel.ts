import { abortReason, parkWaiter, type Waiter } from '@kubelet-ts/core';

/**
 * A bounded FIFO with Go channel semantics for a non-blocking sender: push() never waits; when the
 * buffer holds `capacity` items the item is dropped, counted and push() returns false (Go:
 * `select { case ch <- e: default: }`). Receivers wait for the next item.
 *
 * The buffer is a ring so push and receive stay O(1) at any size.
 */
export class EventChannel<T> {
  readonly capacity: number;
  private readonly ring: (T | undefined)[];
  private head = 0;
  private size = 0;
  private droppedCount = 0;
  private closed = false;
  private readonly waiters: Waiter<T | undefined>[] = [];

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`EventChannel capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
    this.ring = new Array<T | undefined>(capacity);
  }

  /** Items buffered and not yet received. */
  get length(): number {
    return this.size;
  }

  /** Items refused because the buffer was full (Go: pleg_discard_events). */
  get dropped(): number {
    return this.droppedCount;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Hands the item to a waiting receiver or buffers it; false (and counted) when full or closed. */
  push(item: T): boolean {
    if (this.closed) {
      this.droppedCount++;
      return false;
    }
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(item);
      return true;
    }
    if (this.size === this.capacity) {
      this.droppedCount++;
      return false;
    }
    this.ring[(this.head + this.size) % this.capacity] = item;
    this.size++;
    return true;
  }

  /** The next buffered item without waiting, or undefined. */
  tryReceive(): T | undefined {
    if (this.size === 0) return undefined;
    const item = this.ring[this.head] as T;
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.size--;
    return item;
  }

  /**
   * The next item; waits while the buffer is empty. Resolves undefined once the channel is closed
   * and drained; rejects with signal.reason on abort.
   */
  receive(signal?: AbortSignal): Promise<T | undefined> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.size > 0) return Promise.resolve(this.tryReceive());
    if (this.closed) return Promise.resolve(undefined);
    return parkWaiter(this.waiters, signal);
  }

  /** Iterates until the channel is closed, or quietly ends when the signal aborts. */
  async *iterate(signal?: AbortSignal): AsyncGenerator<T, void, undefined> {
    for (;;) {
      let item: T | undefined;
      try {
        item = await this.receive(signal);
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      if (item === undefined) return;
      yield item;
    }
  }

  /** Ends every iteration once the buffer is drained; later pushes are dropped. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.resolve(undefined);
  }
}
