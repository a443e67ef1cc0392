/** A scheduled callback; cancel() is idempotent and safe after the timer fired. */
export interface TimerHandle {
  cancel(): void;
}

/**
 * Every component takes a Clock instead of touching Date/setTimeout directly, so tests can drive
 * time with FakeClock (from `@kubelet-ts/core/testing`) instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** now() - t */
  since(t: number): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  setInterval(fn: () => void, ms: number): TimerHandle;
  /** Resolves after ms; rejects with signal.reason (an AbortError by default) on abort, clearing its timer. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The reason an AbortSignal carries, or a standard AbortError when it has none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** True for the error an aborted signal rejects with by default (DOMException or any error named AbortError). */
export function isAbortError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}

/**
 * Shared sleep on top of any clock's setTimeout, so FakeClock and RealClock agree on abort
 * behaviour. The abort listener is removed when the timer fires: loops sleep on one long-lived
 * signal thousands of times and must not pile up listeners.
 */
export function sleepWithClock(clock: Pick<Clock, 'setTimeout'>, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      timer.cancel();
      reject(abortReason(signal as AbortSignal));
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One receiver parked until a producer hands it a value (see parkWaiter). */
export interface Waiter<T> {
  resolve(value: T): void;
}

/**
 * Parks a receiver in `waiters` until a producer shifts it out and resolves it; if signal aborts
 * first, the receiver leaves the list and the promise rejects with the abort reason. No listener
 * is left behind either way.
 */
export function parkWaiter<T>(waiters: Waiter<T>[], signal?: AbortSignal): Promise<T> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const waiter: Waiter<T> = {
      resolve: (value) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      },
    };
    const onAbort = (): void => {
      const index = waiters.indexOf(waiter);
      if (index >= 0) waiters.splice(index, 1);
      reject(abortReason(signal as AbortSignal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    waiters.push(waiter);
  });
}

/** The process clock. Timers stay ref'ed (a pending timer is real work); cancel() clears them. */
export class RealClock implements Clock {
  now(): number {
    return Date.now();
  }

  since(t: number): number {
    return this.now() - t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(timer) };
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    const timer = setInterval(fn, Math.max(1, ms));
    return { cancel: () => clearInterval(timer) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWithClock(this, ms, signal);
  }
}

export const realClock: Clock = new RealClock();
