// Test doubles for the core contracts, published as `@kubelet-ts/core/testing`.
import { sleepWithClock, type Clock, type TimerHandle } from './clock.js';
import type { EventDetails, EventObject, EventRecorder, EventType } from './events.js';
import { errorText, type KeyValues, type Logger, type VerboseLogger } from './logger.js';

interface FakeTimer {
  seq: number;
  due: number;
  fn: () => void;
  /** Set for intervals: the period to reschedule by. */
  intervalMs?: number;
}

/** How many immediate turns flush() waits: enough for chains of awaits that hop through setImmediate. */
const FLUSH_TURNS = 10;
/** advance() gives up when timers keep firing without time moving (a busy loop at one instant). */
const MAX_FIRINGS_AT_ONE_INSTANT = 10_000;

/**
 * A Clock that only moves when told to. step()/setTime() fire due timers synchronously;
 * advance() also lets promise continuations run between firings, which async loops built on
 * sleep() need to schedule their next timer.
 */
export class FakeClock implements Clock {
  private nowMs: number;
  private readonly timers = new Map<number, FakeTimer>();
  private nextSeq = 0;

  constructor(startMs: number = Date.parse('2026-01-01T00:00:00Z')) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  since(t: number): number {
    return this.nowMs - t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.schedule({ seq: this.nextSeq++, due: this.nowMs + Math.max(0, ms), fn });
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    // Node clamps intervals below 1 ms to 1 ms; so do we, which also keeps step() finite.
    const intervalMs = Math.max(1, ms);
    return this.schedule({ seq: this.nextSeq++, due: this.nowMs + intervalMs, fn, intervalMs });
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWithClock(this, ms, signal);
  }

  /**
   * Moves time forward by ms, firing every timer due in the window in time order, each with now()
   * at its own due time. Timers scheduled while firing also fire if they fall in the window.
   * Promise continuations do not run in between; use advance() for async code.
   */
  step(ms: number): void {
    this.runUntil(this.nowMs + Math.max(0, ms));
  }

  /** Jumps to an absolute time: forward fires due timers as step() does; backward fires nothing. */
  setTime(ms: number): void {
    if (ms < this.nowMs) this.nowMs = ms;
    else this.runUntil(ms);
  }

  /** Number of timers and intervals scheduled and not cancelled. */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** When the next timer is due, undefined if none is pending. */
  nextTimerAt(): number | undefined {
    return this.peek()?.due;
  }

  /**
   * Moves time forward by ms like step(), but flushes promise continuations before and after each
   * firing so sleep()-based loops schedule their next timer in time. Without stepMs it jumps from
   * one due timer to the next; with it, it moves in stepMs increments.
   */
  async advance(ms: number, stepMs?: number): Promise<void> {
    const target = this.nowMs + Math.max(0, ms);
    await this.flush();
    let firingsWithoutProgress = 0;
    for (;;) {
      const next = this.peek();
      const hasDueTimer = next !== undefined && next.due <= this.nowMs;
      if (this.nowMs >= target && !hasDueTimer) return;
      const before = this.nowMs;
      if (hasDueTimer) {
        this.fireNext();
      } else if (stepMs !== undefined && stepMs > 0) {
        this.runUntil(Math.min(this.nowMs + stepMs, target));
      } else {
        this.nowMs = Math.min(next?.due ?? target, target);
      }
      await this.flush();
      firingsWithoutProgress = this.nowMs === before ? firingsWithoutProgress + 1 : 0;
      if (firingsWithoutProgress > MAX_FIRINGS_AT_ONE_INSTANT) {
        throw new Error(`FakeClock.advance: timers kept firing at ${new Date(this.nowMs).toISOString()} without time moving`);
      }
    }
  }

  /** Lets pending promise continuations and immediates run, without moving time. */
  async flush(): Promise<void> {
    for (let i = 0; i < FLUSH_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private schedule(timer: FakeTimer): TimerHandle {
    this.timers.set(timer.seq, timer);
    return { cancel: () => this.timers.delete(timer.seq) };
  }

  private peek(): FakeTimer | undefined {
    let earliest: FakeTimer | undefined;
    for (const timer of this.timers.values()) {
      if (!earliest || timer.due < earliest.due || (timer.due === earliest.due && timer.seq < earliest.seq)) earliest = timer;
    }
    return earliest;
  }

  private runUntil(target: number): void {
    for (;;) {
      const next = this.peek();
      if (!next || next.due > target) break;
      this.fireNext();
    }
    this.nowMs = Math.max(this.nowMs, target);
  }

  /** Fires the earliest timer at its due time (the caller checked it is due). */
  private fireNext(): void {
    const timer = this.peek() as FakeTimer;
    this.nowMs = Math.max(this.nowMs, timer.due);
    if (timer.intervalMs !== undefined) {
      // Rescheduled before running, so a throwing callback or a cancel() inside it behaves as with real timers.
      this.timers.delete(timer.seq);
      timer.seq = this.nextSeq++;
      timer.due += timer.intervalMs;
      this.timers.set(timer.seq, timer);
    } else {
      this.timers.delete(timer.seq);
    }
    timer.fn();
  }
}

export type LogLevel = 'info' | 'warn' | 'error';

export interface LogEntry {
  level: LogLevel;
  /** The v() level; 0 for plain info, warn and error. */
  v: number;
  msg: string;
  /** Key/values including those added with with(). */
  kv: KeyValues;
  err?: unknown;
}

/** A Logger that keeps every entry for assertions; loggers made with with() share the entries. */
export class RecordingLogger implements Logger {
  readonly entries: LogEntry[];
  private readonly verbosity: number;
  private readonly baseKv: KeyValues;

  /**
   * verbosity: highest v() level recorded (default 10); entries: an array to record into (to
   * share one record between loggers); kv: key/values added to every entry.
   */
  constructor(opts: { verbosity?: number; entries?: LogEntry[]; kv?: KeyValues } = {}) {
    this.verbosity = opts.verbosity ?? 10;
    this.entries = opts.entries ?? [];
    this.baseKv = opts.kv ?? {};
  }

  info(msg: string, kv?: KeyValues): void {
    this.record('info', 0, msg, undefined, kv);
  }

  warn(msg: string, kv?: KeyValues): void {
    this.record('warn', 0, msg, undefined, kv);
  }

  error(msg: string, err?: unknown, kv?: KeyValues): void {
    this.record('error', 0, msg, err, kv);
  }

  v(level: number): VerboseLogger {
    if (level > this.verbosity) return { enabled: false, info: () => undefined };
    return { enabled: true, info: (msg, kv) => this.record('info', level, msg, undefined, kv) };
  }

  with(kv: KeyValues): Logger {
    return new RecordingLogger({ verbosity: this.verbosity, entries: this.entries, kv: { ...this.baseKv, ...kv } });
  }

  /** The messages logged, optionally only those of one level. */
  messages(level?: LogLevel): string[] {
    return this.entries.filter((e) => level === undefined || e.level === level).map((e) => e.msg);
  }

  /** The first entry whose message equals msg, or matches it when msg is a RegExp. */
  find(msg: string | RegExp): LogEntry | undefined {
    return this.entries.find((e) => (typeof msg === 'string' ? e.msg === msg : msg.test(e.msg)));
  }

  /** Entries as one-line text, handy in assertion messages. */
  lines(): string[] {
    return this.entries.map((e) => {
      const err = e.err !== undefined ? ` err=${JSON.stringify(errorText(e.err))}` : '';
      return `${e.level}${e.v > 0 ? `(v${e.v})` : ''} ${JSON.stringify(e.msg)}${err} ${JSON.stringify(e.kv)}`;
    });
  }

  clear(): void {
    this.entries.length = 0;
  }

  private record(level: LogLevel, v: number, msg: string, err: unknown, kv?: KeyValues): void {
    const entry: LogEntry = { level, v, msg, kv: { ...this.baseKv, ...kv } };
    if (err !== undefined) entry.err = err;
    this.entries.push(entry);
  }
}

export interface RecordedEvent {
  /** The object as the component passed it (a V1Pod, a node reference...). */
  object: EventObject;
  type: EventType;
  reason: string;
  message: string;
  /** Only set when the component passed details. */
  details?: EventDetails;
}

/** An EventRecorder that keeps every event for assertions. */
export class RecordingEventRecorder implements EventRecorder {
  readonly events: RecordedEvent[] = [];

  event(object: EventObject, type: EventType, reason: string, message: string, details?: EventDetails): void {
    const recorded: RecordedEvent = { object, type, reason, message };
    if (details !== undefined) recorded.details = details;
    this.events.push(recorded);
  }

  /** The reasons recorded, in order. */
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }

  /** The messages recorded, optionally only those with one reason. */
  messages(reason?: string): string[] {
    return this.events.filter((e) => reason === undefined || e.reason === reason).map((e) => e.message);
  }

  /** The first event with a reason. */
  find(reason: string): RecordedEvent | undefined {
    return this.events.find((e) => e.reason === reason);
  }

  /** Events as `Type Reason message` lines, handy in assertion messages. */
  lines(): string[] {
    return this.events.map((e) => `${e.type} ${e.reason} ${e.message}`);
  }

  clear(): void {
    this.events.length = 0;
  }
}

/**
 * A failed API call as client-node's ApiException shapes it (HTTP status in `code`, the kube Status as JSON text in
 * `body`, client-node's message layout), for fakes of API clients; core's apiErrorCode/apiErrorReason/isNotFound
 * read it as they read the real one, without loading client-node.
 */
export class FakeApiError extends Error {
  readonly body: string;
  readonly headers: Record<string, string> = {};
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
    super(`HTTP-Code: ${code}\nMessage: ${message}\nBody: ${body}\nHeaders: {}`);
    this.name = 'ApiException';
    this.body = body;
  }
}

/**
 * Captures what is written to process.stderr (where `defaultLogger` writes) until restore(), instead of showing it:
 * `chunks()` as written, `lines()` split on newlines. The host's teardown restores stderr if the test did not.
 */
export function captureStderr(host: { teardown(fn: () => void): void }): { chunks: () => string[]; lines: () => string[]; restore: () => void } {
  const chunks: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  let restored = false;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  }) as typeof process.stderr.write;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    process.stderr.write = original;
  };
  host.teardown(restore);
  return { chunks: () => [...chunks], lines: () => chunks.join('').split('\n').filter((l) => l !== ''), restore };
}
export { startPrivateBus, type PrivateBus, type PrivateBusOptions } from './testing-dbus.js';
