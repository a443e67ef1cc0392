import { realClock, type Clock } from './clock.js';

export interface BackoffOptions {
  /** The first backoff an id gets. */
  initialMs: number;
  /** Doubling stops here. */
  maxMs: number;
  clock?: Clock;
  /** An entry idle longer than this restarts from initialMs, and gc() drops it. Default 2*maxMs. */
  maxDurationMs?: number;
  /** Max jitter factor (Go's maxJitterFactor): each step adds up to jitter*previous backoff. Default 0. */
  jitter?: number;
  /** Source of randomness for jitter, injectable for tests. Default Math.random. */
  random?: () => number;
}

interface BackoffEntry {
  backoffMs: number;
  lastUpdate: number;
}

/** Per-id exponential backoff, as client-go's flowcontrol.Backoff. */
export class Backoff {
  private readonly entries = new Map<string, BackoffEntry>();
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly maxDurationMs: number;
  private readonly jitterFactor: number;
  private readonly random: () => number;
  private readonly clock: Clock;

  constructor(opts: BackoffOptions) {
    this.initialMs = opts.initialMs;
    this.maxMs = opts.maxMs;
    this.maxDurationMs = opts.maxDurationMs ?? 2 * opts.maxMs;
    this.jitterFactor = opts.jitter ?? 0;
    this.random = opts.random ?? Math.random;
    this.clock = opts.clock ?? realClock;
  }

  /** Moves id's backoff to the next step: initialMs the first time (or after expiry), then doubling up to maxMs. */
  next(id: string, eventTime: number = this.clock.now()): void {
    const entry = this.entries.get(id);
    if (!entry || this.hasExpired(eventTime, entry.lastUpdate)) {
      this.entries.set(id, { backoffMs: this.initialMs + this.jitter(this.initialMs), lastUpdate: this.clock.now() });
      return;
    }
    entry.backoffMs = Math.min(entry.backoffMs * 2 + this.jitter(entry.backoffMs), this.maxMs);
    entry.lastUpdate = this.clock.now();
  }

  /** The current backoff of id in ms, 0 if it has none. */
  get(id: string): number {
    return this.entries.get(id)?.backoffMs ?? 0;
  }

  /** True while less than the current backoff has passed since eventTime (e.g. a container's exit). */
  isInBackOffSince(id: string, eventTime: number): boolean {
    const entry = this.entries.get(id);
    if (!entry || this.hasExpired(eventTime, entry.lastUpdate)) return false;
    return this.clock.now() - eventTime < entry.backoffMs;
  }

  /** True when eventTime falls within the current backoff window counted from the last next(). */
  isInBackOffSinceUpdate(id: string, eventTime: number): boolean {
    const entry = this.entries.get(id);
    if (!entry || this.hasExpired(eventTime, entry.lastUpdate)) return false;
    return eventTime - entry.lastUpdate < entry.backoffMs;
  }

  /** Forgets id's backoff, so its next failure starts from initialMs. */
  reset(id: string): void {
    this.entries.delete(id);
  }

  /** Drops entries not updated for longer than maxDurationMs; callers run it periodically. */
  gc(): void {
    const now = this.clock.now();
    for (const [id, entry] of this.entries) {
      if (now - entry.lastUpdate > this.maxDurationMs) this.entries.delete(id);
    }
  }

  delete(id: string): void {
    this.entries.delete(id);
  }

  /** Number of ids tracked, for gc tests and metrics. */
  size(): number {
    return this.entries.size;
  }

  private hasExpired(eventTime: number, lastUpdate: number): boolean {
    return eventTime - lastUpdate > this.maxDurationMs;
  }

  private jitter(delayMs: number): number {
    return this.jitterFactor > 0 ? this.random() * this.jitterFactor * delayMs : 0;
  }
}

/** The kubelet's CrashLoopBackOff: 10 s doubling to 5 min. */
export const containerRestartBackoff = (clock?: Clock): Backoff =>
  new Backoff({ initialMs: 10_000, maxMs: 300_000, clock });
