import { abortReason } from '@kubelet-ts/core';

/**
 * The syncLoop's select: messages from several producers handled one at a time, in arrival order.
 * Tick messages coalesce (like Go's ticker channel, at most one pending per kind), and bounded kinds make
 * their producer wait for room instead of growing without limit.
 */
export class Mailbox<M extends { kind: string }> {
  private readonly queue: M[] = [];
  private readonly pendingTicks = new Set<string>();
  private readonly counts = new Map<string, number>();
  private wake?: () => void;
  private readonly roomWaiters: Array<() => void> = [];

  constructor(private readonly capacity: Record<string, number> = {}) {}

  push(message: M): void {
    this.queue.push(message);
    this.counts.set(message.kind, (this.counts.get(message.kind) ?? 0) + 1);
    this.wake?.();
  }

  /** Queues a tick unless one of the same kind is already waiting. */
  tick(message: M): void {
    if (this.pendingTicks.has(message.kind)) return;
    this.pendingTicks.add(message.kind);
    this.push(message);
  }

  /** Resolves once a message of this kind fits under its capacity. */
  async waitForRoom(kind: string, signal: AbortSignal): Promise<void> {
    const limit = this.capacity[kind];
    while (limit !== undefined && (this.counts.get(kind) ?? 0) >= limit && !signal.aborted) {
      await this.waitFor(signal, (resolve) => this.roomWaiters.push(resolve));
    }
  }

  async next(signal: AbortSignal): Promise<M> {
    while (this.queue.length === 0) {
      if (signal.aborted) throw abortReason(signal);
      await this.waitFor(signal, (resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    const message = this.queue.shift()!;
    this.pendingTicks.delete(message.kind);
    this.counts.set(message.kind, (this.counts.get(message.kind) ?? 1) - 1);
    for (const resolve of this.roomWaiters.splice(0)) resolve();
    return message;
  }

  /** Waits until `register`'s callback is called or the signal aborts, leaving no listener behind. */
  private waitFor(signal: AbortSignal, register: (resolve: () => void) => void): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      register(done);
    });
  }

  get size(): number {
    return this.queue.length;
  }
}
