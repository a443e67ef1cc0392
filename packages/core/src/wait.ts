import { abortReason, isAbortError, realClock, type Clock } from './clock.js';
import { createLogger, type Logger } from './logger.js';

export interface LoopOptions {
  /** Where errors thrown by the loop body go (Go's HandleCrash). Default: a stderr logger. */
  logger?: Logger;
  /** Names the loop in those log lines. */
  name?: string;
}

export type LoopFunction = (signal: AbortSignal) => void | Promise<void>;

let fallbackLogger: Logger | undefined;
function loopLogger(opts?: LoopOptions): Logger {
  if (opts?.logger) return opts.logger;
  // A swallowed error in a background loop is a bug nobody finds; with no logger given we still say something.
  fallbackLogger ??= createLogger({ name: 'wait' });
  return fallbackLogger;
}

/**
 * wait.Jitter: a duration between durationMs and durationMs*(1+maxFactor).
 * A maxFactor <= 0 means 1, as in Go.
 */
export function jitter(durationMs: number, maxFactor: number, random: () => number = Math.random): number {
  const factor = maxFactor <= 0 ? 1 : maxFactor;
  return durationMs + random() * factor * durationMs;
}

/** A macrotask turn, so a loop whose period has already elapsed cannot starve the event loop. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * wait.JitterUntil: runs fn every periodMs (jittered by up to jitterFactor*periodMs when > 0)
 * until signal aborts. With sliding the period starts after fn finishes; without it the period
 * includes fn's run time. Errors from fn are logged and the loop goes on. The promise resolves once
 * the signal aborted and any run of fn in progress has finished; no timers are left behind.
 */
export async function jitterUntil(
  fn: LoopFunction,
  periodMs: number,
  jitterFactor: number,
  sliding: boolean,
  signal: AbortSignal,
  clock: Clock = realClock,
  opts?: LoopOptions,
): Promise<void> {
  const waitFor = (): number => (jitterFactor > 0 ? jitter(periodMs, jitterFactor) : periodMs);
  while (!signal.aborted) {
    // Non-sliding: the period (Go starts its timer here) includes fn's run time.
    let periodStart = clock.now();
    let delay = sliding ? 0 : waitFor();
    try {
      await fn(signal);
    } catch (err) {
      if (!(signal.aborted && isAbortError(err))) {
        loopLogger(opts).error('Observed an error in a loop; continuing', err, opts?.name ? { loop: opts.name } : undefined);
      }
    }
    if (signal.aborted) return;
    if (sliding) {
      periodStart = clock.now();
      delay = waitFor();
    }
    const remaining = delay - clock.since(periodStart);
    if (remaining > 0) {
      try {
        await clock.sleep(remaining, signal);
      } catch {
        return; // aborted
      }
    } else {
      await yieldToEventLoop();
    }
  }
}

/** wait.Until: runs fn, waits periodMs after it finishes, repeats until signal aborts. */
export function until(fn: LoopFunction, periodMs: number, signal: AbortSignal, clock?: Clock, opts?: LoopOptions): Promise<void> {
  return jitterUntil(fn, periodMs, 0, true, signal, clock, opts);
}

/** wait.NonSlidingUntil: like until, but runs start periodMs apart regardless of fn's duration. */
export function nonSlidingUntil(
  fn: LoopFunction,
  periodMs: number,
  signal: AbortSignal,
  clock?: Clock,
  opts?: LoopOptions,
): Promise<void> {
  return jitterUntil(fn, periodMs, 0, false, signal, clock, opts);
}

/** What pollUntil rejects with when the condition stays false for timeoutMs. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`timed out waiting for the condition after ${timeoutMs}ms`);
  }
}

export interface PollOptions {
  /** Check the condition before the first interval (Go's PollImmediate). Default true. */
  immediate?: boolean;
}

/**
 * Checks condition every intervalMs until it returns true. Rejects with WaitTimeoutError after
 * timeoutMs (Infinity: never), with the condition's own error if it throws (as a Go ConditionFunc
 * returning an error), or with signal.reason on abort. The condition is checked once more at the
 * deadline, so a timeout shorter than the interval still gets a final answer.
 */
export async function pollUntil(
  condition: () => boolean | Promise<boolean>,
  intervalMs: number,
  timeoutMs: number,
  signal?: AbortSignal,
  clock: Clock = realClock,
  opts: PollOptions = {},
): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  let check = opts.immediate ?? true;
  for (;;) {
    if (signal?.aborted) throw abortReason(signal);
    if (check && (await condition())) return;
    check = true;
    const remaining = deadline - clock.now();
    if (remaining <= 0) throw new WaitTimeoutError(timeoutMs);
    await clock.sleep(Math.min(intervalMs, remaining), signal);
  }
}

/** Runs fn over items with at most limit in flight, in the items' order; resolves when all are done. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  });
  await Promise.all(workers);
}

/**
 * Resolves with promise's value, or with `onAbort` as soon as signal aborts (promise is then left to settle on its
 * own). Unlike `Promise.race([promise, aborted])` against one long-lived abort promise, it leaves nothing behind once
 * settled: that race adds a reaction to the abort promise on every call, and each reaction keeps the value it raced
 * reachable until the signal aborts (a loop over a stream of pod updates kept every update).
 */
export function raceAbort<T, A>(promise: Promise<T>, signal: AbortSignal, onAbort: A): Promise<T | A> {
  if (signal.aborted) return Promise.resolve(onAbort);
  return new Promise<T | A>((resolve, reject) => {
    const aborted = (): void => resolve(onAbort);
    signal.addEventListener('abort', aborted, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', aborted);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', aborted);
        reject(error);
      },
    );
  });
}

/** p, or a rejection with the abort reason as soon as signal aborts (for work that cannot be aborted itself, e.g. a generated client's list); the listener goes once p settles. */
export function rejectOnAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
