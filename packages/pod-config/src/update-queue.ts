/**
 * The PodConfig output buffer: FIFO, never drops, with backpressure. push() always enqueues
 * (so a producer that does not wait loses nothing) and returns a promise that settles once the
 * buffer holds at most `capacity` items — the moment a send on Go's buffered channel would have
 * returned. Producers that await it block like a Go sender; one consumer iterates.
 */
export class UpdateQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private head = 0;
  private closed = false;
  private consumerActive = false;
  private waitingConsumer: ((r: IteratorResult<T>) => void) | undefined;
  private readonly spaceWaiters: { position: number; resolve: () => void }[] = [];
  /** Count of items ever shifted, so a waiter knows when its item has entered the buffer. */
  private shifted = 0;
  private pushed = 0;

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`capacity must be at least 1, got ${capacity}`);
  }

  /** Items waiting to be consumed. */
  get length(): number {
    return this.items.length - this.head;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  push(item: T): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.pushed++;
    if (this.waitingConsumer) {
      const resolve = this.waitingConsumer;
      this.waitingConsumer = undefined;
      this.shifted++;
      resolve({ value: item, done: false });
      return Promise.resolve();
    }
    this.items.push(item);
    if (this.length <= this.capacity) return Promise.resolve();
    // This item is in the buffer once all but `capacity` of the items up to it were taken.
    const position = this.pushed - this.capacity;
    return new Promise<void>((resolve) => this.spaceWaiters.push({ position, resolve }));
  }

  /** Takes the next item without waiting, undefined when empty. */
  tryShift(): T | undefined {
    if (this.length === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined as T;
    this.head++;
    this.shifted++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.releaseWaiters();
    return item;
  }

  /** Ends iteration once the buffered items are consumed; pending push() promises resolve. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.spaceWaiters.splice(0)) w.resolve();
    if (this.waitingConsumer && this.length === 0) {
      const resolve = this.waitingConsumer;
      this.waitingConsumer = undefined;
      resolve({ value: undefined, done: true });
    }
  }

  private releaseWaiters(): void {
    while (this.spaceWaiters.length > 0 && this.spaceWaiters[0].position <= this.shifted) {
      this.spaceWaiters.shift()?.resolve();
    }
  }

  /** One consumer at a time: a second concurrent iteration throws (updates would be split between them). */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.consumerActive) throw new Error('the updates stream already has a consumer');
    this.consumerActive = true;
    const next = (): Promise<IteratorResult<T>> => {
      if (this.length > 0) return Promise.resolve({ value: this.tryShift() as T, done: false });
      if (this.closed || !this.consumerActive) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => {
        this.waitingConsumer = resolve;
      });
    };
    const release = (): Promise<IteratorResult<T>> => {
      this.consumerActive = false;
      const waiting = this.waitingConsumer;
      this.waitingConsumer = undefined;
      waiting?.({ value: undefined, done: true });
      return Promise.resolve({ value: undefined, done: true });
    };
    return { next, return: release };
  }
}
