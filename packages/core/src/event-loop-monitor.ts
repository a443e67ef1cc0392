// The health of the process's event loop, as the Go kubelet's PLEG-healthy check watches its relist: a timer that
// should run every interval, and how late it ran. A Node.js process has one loop; a blocked loop stalls every
// component of the kubelet at once.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { RealClock, realClock, type Clock, type TimerHandle } from './clock.js';
import { formatDuration } from './duration.js';
import { defaultLogger, type Logger } from './logger.js';
import { formatTime } from './time-format.js';

/** The event loop's cumulative idle and active time, in ms, as `performance.eventLoopUtilization()` returns them. */
export interface EventLoopUtilizationSample {
  idle: number;
  active: number;
}

/**
 * The delay histogram `perf_hooks.monitorEventLoopDelay()` returns (an IntervalHistogram, values in ns); the
 * seam tests replace.
 */
export interface EventLoopDelayHistogram {
  enable(): boolean;
  disable(): boolean;
  reset(): void;
  readonly count?: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly stddev: number;
  percentile(percentile: number): number;
}

/** The loop's delays recorded since the previous takeDelayStats(), in ms. */
export interface EventLoopDelayStats {
  minMs: number;
  maxMs: number;
  meanMs: number;
  stddevMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
}

/** One tick that lagged more than the threshold. */
export interface EventLoopStall {
  /** How late the tick ran, in ms: how long the loop was blocked. */
  lagMs: number;
  /** When the tick ran (the end of the stall), epoch ms of the clock. */
  at: number;
}

export interface EventLoopMonitorOptions {
  /** Default realClock. Schedules the ticks and dates the stalls. */
  clock?: Clock;
  /**
   * A monotonic clock in ms that lag is measured with. Default: `performance.now()` with the real clock (a wall
   * clock jump is not a stall), the clock's now() with any other clock (FakeClock).
   */
  now?: () => number;
  /** How often the loop is sampled (default 500 ms). */
  intervalMs?: number;
  /** A tick later than this makes check() fail (default 10 s). */
  thresholdMs?: number;
  /** How long check() keeps failing after a stall (default 1 min). */
  windowMs?: number;
  /** Logs one warning per stall over the threshold (default: defaultLogger). */
  logger?: Logger;
  /** Default `() => performance.eventLoopUtilization()`. */
  eventLoopUtilization?: () => EventLoopUtilizationSample;
  /** Default `() => monitorEventLoopDelay({ resolution: 10 })`, made on the first start(). */
  delayHistogram?: () => EventLoopDelayHistogram;
}

const DEFAULT_INTERVAL_MS = 500;
const DEFAULT_THRESHOLD_MS = 10_000;
const DEFAULT_WINDOW_MS = 60_000;
/** prom-client's default eventLoopMonitoringPrecision. */
const DELAY_RESOLUTION_MS = 10;

/**
 * Watches the event loop: a tick every `intervalMs` on the clock, whose lag (when it ran - when it was due) is
 * how long the loop could not run timers. `check()` is a healthz check in the style of Go's PLEG-healthy check:
 * it fails while a tick lagged more than `thresholdMs` within the last `windowMs`, or when no tick ran for longer
 * than the threshold. `utilization()` and `takeDelayStats()` read `performance.eventLoopUtilization()` and
 * `monitorEventLoopDelay()` for /metrics. The timer never keeps the process alive.
 */
export class EventLoopMonitor {
  readonly intervalMs: number;
  readonly thresholdMs: number;
  readonly windowMs: number;
  private readonly clock: Clock;
  private readonly monotonic: () => number;
  private readonly logger: Logger;
  private readonly readUtilization: () => EventLoopUtilizationSample;
  private readonly makeHistogram: () => EventLoopDelayHistogram;
  private histogram?: EventLoopDelayHistogram;
  private timer?: TimerHandle;
  /** Signals of the start(signal) calls still live; the monitor runs while one is or start() was called bare. */
  private readonly holders = new Set<AbortSignal>();
  private heldWithoutSignal = false;
  private dueAt = 0;
  private lastTickAt?: number;
  private currentLag = 0;
  private worst?: EventLoopStall;
  /** The latest stall, with the monotonic time of its tick. */
  private lastStall?: EventLoopStall & { seenAt: number };
  private lastUtilization?: EventLoopUtilizationSample;

  constructor(options: EventLoopMonitorOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.monotonic = options.now ?? (this.clock instanceof RealClock ? () => performance.now() : () => this.clock.now());
    this.intervalMs = Math.max(1, options.intervalMs ?? DEFAULT_INTERVAL_MS);
    this.thresholdMs = options.thresholdMs ?? DEFAULT_THRESHOLD_MS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.logger = options.logger ?? defaultLogger;
    this.readUtilization = options.eventLoopUtilization ?? (() => performance.eventLoopUtilization());
    this.makeHistogram = options.delayHistogram ?? (() => monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS }));
  }

  /**
   * Starts ticking (idempotent). With a signal, the monitor keeps running while any signal given to start() is
   * live, so kubelets sharing the process (a fleet) share one monitor: the last one to stop stops it.
   */
  start(signal?: AbortSignal): void {
    if (signal?.aborted) return;
    if (signal) {
      if (!this.holders.has(signal)) {
        this.holders.add(signal);
        signal.addEventListener('abort', () => this.release(signal), { once: true });
      }
    } else {
      this.heldWithoutSignal = true;
    }
    if (this.timer) return;
    this.histogram ??= this.makeHistogram();
    this.histogram.enable();
    this.lastTickAt = this.monotonic();
    this.schedule();
  }

  /** Stops ticking and the delay histogram, whoever started it. */
  stop(): void {
    this.heldWithoutSignal = false;
    this.holders.clear();
    this.timer?.cancel();
    this.timer = undefined;
    this.histogram?.disable();
  }

  /** Whether the tick timer is scheduled. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** The lag of the latest tick, in ms (0 before the first). */
  lagMs(): number {
    return this.currentLag;
  }

  /** The worst lag seen since the monitor was made, and when. */
  worstLag(): EventLoopStall | undefined {
    return this.worst && { ...this.worst };
  }

  /**
   * A healthz check: an error while a tick lagged more than the threshold within the window, or when the
   * monitor has not ticked for longer than the threshold (or never started).
   */
  check(): Error | undefined {
    if (this.lastTickAt === undefined) return new Error('event loop monitor has yet to start');
    const now = this.monotonic();
    const idle = now - this.lastTickAt;
    if (idle > this.thresholdMs) {
      return new Error(`event loop was last seen active ${formatDuration(Math.round(idle))} ago; threshold is ${formatDuration(this.thresholdMs)}`);
    }
    const stall = this.lastStall;
    if (stall && now - stall.seenAt <= this.windowMs) {
      return new Error(`event loop was blocked for ${formatDuration(Math.round(stall.lagMs))} at ${formatTime(stall.at)}; threshold is ${formatDuration(this.thresholdMs)}`);
    }
    return undefined;
  }

  /** The loop's utilization (0..1) since the previous call; since process start on the first. */
  utilization(): number {
    const sample = this.readUtilization();
    const previous = this.lastUtilization ?? { idle: 0, active: 0 };
    this.lastUtilization = { idle: sample.idle, active: sample.active };
    const active = sample.active - previous.active;
    const total = active + (sample.idle - previous.idle);
    return total > 0 ? Math.min(1, Math.max(0, active / total)) : 0;
  }

  /**
   * The loop delays recorded since the previous call (in ms) and resets the histogram, as prom-client does at
   * each scrape. Zeros when nothing was recorded (the monitor is stopped, or no sample yet).
   */
  takeDelayStats(): EventLoopDelayStats {
    const h = this.histogram;
    if (!h || h.count === 0 || !(h.max > 0)) return { minMs: 0, maxMs: 0, meanMs: 0, stddevMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 };
    const ms = (ns: number) => (Number.isFinite(ns) ? ns / 1e6 : 0);
    const stats = {
      minMs: ms(h.min),
      maxMs: ms(h.max),
      meanMs: ms(h.mean),
      stddevMs: ms(h.stddev),
      p50Ms: ms(h.percentile(50)),
      p90Ms: ms(h.percentile(90)),
      p99Ms: ms(h.percentile(99)),
    };
    h.reset();
    return stats;
  }

  private release(signal: AbortSignal): void {
    this.holders.delete(signal);
    if (this.holders.size === 0 && !this.heldWithoutSignal) this.stop();
  }

  private schedule(): void {
    this.dueAt = this.monotonic() + this.intervalMs;
    this.timer = this.clock instanceof RealClock ? unrefTimeout(() => this.tick(), this.intervalMs) : this.clock.setTimeout(() => this.tick(), this.intervalMs);
  }

  private tick(): void {
    const now = this.monotonic();
    const lag = Math.max(0, now - this.dueAt);
    this.currentLag = lag;
    this.lastTickAt = now;
    if (!this.worst || lag > this.worst.lagMs) this.worst = { lagMs: lag, at: this.clock.now() };
    if (lag > this.thresholdMs) {
      this.lastStall = { lagMs: lag, at: this.clock.now(), seenAt: now };
      this.logger.warn('Event loop was blocked longer than the threshold', {
        blocked: formatDuration(Math.round(lag)),
        threshold: formatDuration(this.thresholdMs),
      });
    }
    this.schedule();
  }
}

/** A real timer that does not keep the process alive. */
function unrefTimeout(fn: () => void, ms: number): TimerHandle {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
}
