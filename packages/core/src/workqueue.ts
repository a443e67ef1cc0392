import { abortReason, parkWaiter, realClock, type Clock, type TimerHandle, type Waiter } from './clock.js';

/** Decides how long an item waits before it is re-added (client-go workqueue.RateLimiter). */
export interface RateLimiter<T> {
  /** How long item should wait now; counts a failure where the limiter tracks them. */
  when(item: T): number;
  /** Stops tracking item (it succeeded). */
  forget(item: T): void;
  /** How many failures are being counted for item. */
  numRequeues(item: T): number;
}

/** baseMs * 2^failures, capped at maxMs (client-go ItemExponentialFailureRateLimiter). */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  when(item: T): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    const backoff = this.baseMs * 2 ** exp;
    return Number.isFinite(backoff) && backoff <= this.maxMs ? backoff : this.maxMs;
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * An overall token bucket (client-go BucketRateLimiter over x/time/rate): qps tokens per second
 * refill a bucket of burst; each when() takes a token and returns how long until it exists.
 */
export class BucketRateLimiter<T> implements RateLimiter<T> {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly clock: Clock = realClock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_item: T): number {
    const now = this.clock.now();
    const elapsedMs = Math.max(0, now - this.last);
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_item: T): void {}

  numRequeues(_item: T): number {
    return 0;
  }
}

/** The longest wait of several limiters (client-go MaxOfRateLimiter). */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  private readonly limiters: RateLimiter<T>[];

  constructor(...limiters: RateLimiter<T>[]) {
    this.limiters = limiters;
  }

  when(item: T): number {
    // Every limiter must see the call (each counts it), so no short-circuit.
    return this.limiters.reduce((longest, limiter) => Math.max(longest, limiter.when(item)), 0);
  }

  forget(item: T): void {
    for (const limiter of this.limiters) limiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.limiters.reduce((most, limiter) => Math.max(most, limiter.numRequeues(item)), 0);
  }
}

/** client-go DefaultControllerRateLimiter: per-item 5 ms..1000 s, overall 10 qps with a burst of 100. */
export function defaultControllerRateLimiter<T>(clock?: Clock): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(new ItemExponentialFailureRateLimiter<T>(5, 1_000_000), new BucketRateLimiter<T>(10, 100, clock));
}

export interface RateLimitingQueueOptions<T> {
  clock?: Clock;
  /** Replaces the limiter built from the options below. */
  rateLimiter?: RateLimiter<T>;
  /** Per-item failure backoff base. Default 5 ms. */
  baseDelayMs?: number;
  /** Per-item failure backoff cap. Default 1000 s. */
  maxDelayMs?: number;
  /** When set, an overall token bucket also limits addRateLimited (the longer wait wins). */
  qps?: number;
  /** Bucket size for qps. Default 100, as client-go's default controller limiter. */
  burst?: number;
}

/**
 * client-go's rate-limiting work queue. Items are compared by identity (use string keys): an item
 * is queued at most once, never handed to two workers at once, and one re-added while being
 * processed is queued again when done() is called for it.
 */
export class RateLimitingQueue<T> {
  private readonly queue: T[] = [];
  /** Items that need processing: queued, or re-added while processing. */
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly waiters: Waiter<T | undefined>[] = [];
  private readonly waiting = new Map<T, { readyAt: number; timer: TimerHandle }>();
  private readonly drainWaiters: (() => void)[] = [];
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<T>;
  private shutDownRequested = false;

  constructor(opts: RateLimitingQueueOptions<T> = {}) {
    this.clock = opts.clock ?? realClock;
    if (opts.rateLimiter) {
      this.rateLimiter = opts.rateLimiter;
    } else {
      const perItem = new ItemExponentialFailureRateLimiter<T>(opts.baseDelayMs ?? 5, opts.maxDelayMs ?? 1_000_000);
      this.rateLimiter =
        opts.qps !== undefined ? new MaxOfRateLimiter<T>(perItem, new BucketRateLimiter<T>(opts.qps, opts.burst ?? 100, this.clock)) : perItem;
    }
  }

  /** Marks item as needing processing; a no-op while it is already queued or after shutDown(). */
  add(item: T): void {
    if (this.shutDownRequested || this.dirty.has(item)) return;
    this.dirty.add(item);
    if (this.processing.has(item)) return;
    this.queue.push(item);
    this.serveWaiters();
  }

  /**
   * The next item to process; the caller must call done(item) afterwards. Waits while the queue is
   * empty; undefined once the queue is shut down and drained. Rejects if signal aborts while waiting.
   */
  get(signal?: AbortSignal): Promise<T | undefined> {
    // An aborted caller must not take an item into processing it will never mark done.
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.queue.length > 0) return Promise.resolve(this.take());
    if (this.shutDownRequested) return Promise.resolve(undefined);
    return parkWaiter(this.waiters, signal);
  }

  /** Ends processing of item; if it was re-added meanwhile, it is queued again. */
  done(item: T): void {
    this.processing.delete(item);
    if (this.dirty.has(item)) {
      this.queue.push(item);
      this.serveWaiters();
    } else if (this.processing.size === 0) {
      this.resolveDrainWaiters();
    }
  }

  /** Adds item after ms (by the clock). A pending earlier addAfter of the same item wins. */
  addAfter(item: T, ms: number): void {
    if (this.shutDownRequested) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const pending = this.waiting.get(item);
    if (pending) {
      if (pending.readyAt <= readyAt) return;
      pending.timer.cancel();
    }
    const timer = this.clock.setTimeout(() => {
      this.waiting.delete(item);
      this.add(item);
    }, ms);
    this.waiting.set(item, { readyAt, timer });
  }

  /** Adds item after the rate limiter's delay for it (counting a failure). */
  addRateLimited(item: T): void {
    this.addAfter(item, this.rateLimiter.when(item));
  }

  /** Stops counting failures for item (call after it was processed successfully). */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** Items waiting to be handed out (not those in processing or delayed). */
  len(): number {
    return this.queue.length;
  }

  /** Items whose addAfter has not come due yet. */
  delayedLen(): number {
    return this.waiting.size;
  }

  /** Ignores further adds, drops delayed items, and lets get() return what is queued then undefined. */
  shutDown(): void {
    this.shutDownRequested = true;
    for (const { timer } of this.waiting.values()) timer.cancel();
    this.waiting.clear();
    // Anyone still waiting found the queue empty, so nothing more is coming for them.
    for (const waiter of this.waiters.splice(0)) waiter.resolve(undefined);
    if (this.processing.size === 0) this.resolveDrainWaiters();
  }

  /** shutDown(), then resolves once every item handed out has been done() (client-go ShutDownWithDrain). */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  shuttingDown(): boolean {
    return this.shutDownRequested;
  }

  private take(): T {
    const item = this.queue.shift() as T;
    this.processing.add(item);
    this.dirty.delete(item);
    return item;
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0 && this.queue.length > 0) {
      (this.waiters.shift() as Waiter<T | undefined>).resolve(this.take());
    }
  }

  private resolveDrainWaiters(): void {
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }
}

/**
 * The kubelet's pkg/kubelet/util/queue WorkQueue: items with a time they become due; getWork()
 * hands out (and removes) the due ones. Enqueuing an item again replaces its due time.
 */
export class TimedWorkQueue<T> {
  private readonly dueAt = new Map<T, number>();
  private readonly clock: Clock;

  constructor(opts: { clock?: Clock } = {}) {
    this.clock = opts.clock ?? realClock;
  }

  enqueue(item: T, delayMs: number): void {
    this.dueAt.set(item, this.clock.now() + delayMs);
  }

  /** Removes and returns the items whose due time is now or past. */
  getWork(): T[] {
    const now = this.clock.now();
    const items: T[] = [];
    for (const [item, due] of this.dueAt) {
      if (due <= now) {
        items.push(item);
        this.dueAt.delete(item);
      }
    }
    return items;
  }

  len(): number {
    return this.dueAt.size;
  }
}
