import { realClock, type Clock } from './clock.js';
import { apiErrorMessage, isApiError } from './api-errors.js';

export type KeyValues = Record<string, unknown>;

export interface VerboseLogger {
  /** Whether this verbosity is logged; check it before computing expensive key/values. */
  enabled: boolean;
  info(msg: string, kv?: KeyValues): void;
}

/** A klog-like structured logger: a constant message plus key/values. */
export interface Logger {
  info(msg: string, kv?: KeyValues): void;
  warn(msg: string, kv?: KeyValues): void;
  error(msg: string, err?: unknown, kv?: KeyValues): void;
  /** klog.V(level): logged only when level <= the configured verbosity. */
  v(level: number): VerboseLogger;
  /** A logger that adds these key/values to every line (klog.LoggerWithValues). */
  with(kv: KeyValues): Logger;
}

export interface LoggerOptions {
  /** Highest v() level that is logged (klog -v). Default 0. */
  verbosity?: number;
  /** 'text' is klog's header format, 'json' one object per line like klog's JSON format. Default 'text'. */
  format?: 'text' | 'json';
  /** Receives each line without its trailing newline. Default: process.stderr. */
  sink?: (line: string) => void;
  clock?: Clock;
  /** Shown where klog prints file:line (text), or as "logger" (json). */
  name?: string;
  /**
   * The least severe lines written (like klog's -stderrthreshold): 'info' writes everything (the
   * default), 'warning' only warnings and errors (info and every v(n) are dropped, and v(n).enabled is
   * false), 'error' only errors.
   */
  minSeverity?: MinSeverity;
}

/** The least severe lines a logger writes: see LoggerOptions.minSeverity. */
export type MinSeverity = 'info' | 'warning' | 'error';

/** klog's severity letter: info, warning, error. */
export type Severity = 'I' | 'W' | 'E';

interface LoggerConfig {
  verbosity: number;
  /** 0 writes info, warnings and errors; 1 warnings and errors; 2 errors only. */
  minRank: number;
  format: 'text' | 'json';
  sink: (line: string) => void;
  clock: Clock;
  name: string | undefined;
  pid: number;
}

const disabledVerboseLogger: VerboseLogger = { enabled: false, info: () => undefined };

class StructuredLogger implements Logger {
  constructor(
    private readonly config: LoggerConfig,
    private readonly baseKv: KeyValues,
  ) {}

  info(msg: string, kv?: KeyValues): void {
    if (this.config.minRank > 0) return;
    this.write('I', 0, msg, undefined, false, kv);
  }

  warn(msg: string, kv?: KeyValues): void {
    if (this.config.minRank > 1) return;
    this.write('W', 0, msg, undefined, false, kv);
  }

  error(msg: string, err?: unknown, kv?: KeyValues): void {
    this.write('E', 0, msg, err, err !== undefined, kv);
  }

  v(level: number): VerboseLogger {
    if (this.config.minRank > 0 || level > this.config.verbosity) return disabledVerboseLogger;
    return { enabled: true, info: (msg, kv) => this.write('I', level, msg, undefined, false, kv) };
  }

  with(kv: KeyValues): Logger {
    return new StructuredLogger(this.config, { ...this.baseKv, ...kv });
  }

  private write(severity: Severity, v: number, msg: string, err: unknown, hasErr: boolean, kv?: KeyValues): void {
    const all = kv ? { ...this.baseKv, ...kv } : this.baseKv;
    const now = this.config.clock.now();
    const line =
      this.config.format === 'json'
        ? formatJsonLine(now, severity, v, msg, err, hasErr, all, this.config.name)
        : formatTextLine(now, severity, msg, err, hasErr, all, this.config.name, this.config.pid);
    this.config.sink(line);
  }
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** klog's header: Lmmdd hh:mm:ss.uuuuuu threadid file:line] — we print UTC so lines compare across hosts. */
export function formatKlogHeader(nowMs: number, severity: Severity, pid: number, name?: string): string {
  const d = new Date(Math.floor(nowMs));
  const micros = Math.floor((nowMs - Math.floor(nowMs / 1000) * 1000) * 1000);
  const date = `${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}`;
  const time = `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(micros, 6)}`;
  const thread = String(pid).padStart(7, ' ');
  return `${severity}${date} ${time} ${thread}${name ? ` ${name}` : ''}]`;
}

function formatTextLine(
  nowMs: number,
  severity: Severity,
  msg: string,
  err: unknown,
  hasErr: boolean,
  kv: KeyValues,
  name: string | undefined,
  pid: number,
): string {
  let line = `${formatKlogHeader(nowMs, severity, pid, name)} ${JSON.stringify(msg)}`;
  if (hasErr) line += ` err=${JSON.stringify(errorText(err))}`;
  for (const [key, value] of Object.entries(kv)) line += ` ${key}=${formatTextValue(value)}`;
  return line;
}

function formatJsonLine(
  nowMs: number,
  severity: Severity,
  v: number,
  msg: string,
  err: unknown,
  hasErr: boolean,
  kv: KeyValues,
  name: string | undefined,
): string {
  // klog's JSON format: errors carry no "v"; the fixed fields win over same-named key/values.
  const record: Record<string, unknown> = { ts: nowMs / 1000 };
  if (name) record.logger = name;
  record.msg = msg;
  if (severity !== 'E') record.v = v;
  if (severity === 'W') record.severity = 'warning';
  if (hasErr) record.err = errorText(err);
  for (const [key, value] of Object.entries(kv)) {
    if (!(key in record)) record[key] = value;
  }
  return safeJsonStringify(record);
}

/** The message of an Error (klog prints err.Error()), or the value's text form. */
export function errorText(err: unknown): string {
  if (isApiError(err)) return apiErrorMessage(err);
  if (err instanceof Error) return err.message;
  if (err === null || err === undefined) return '<nil>';
  if (typeof err === 'string') return err;
  return safeJsonStringify(err);
}

function formatTextValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'undefined':
      return '<nil>';
    case 'function':
    case 'symbol':
      return JSON.stringify(String(value));
    default:
      if (value === null) return '<nil>';
      if (value instanceof Error) return JSON.stringify(value.message);
      if (value instanceof Date) return JSON.stringify(value.toISOString());
      return safeJsonStringify(value);
  }
}

/**
 * JSON.stringify that never throws while logging: cycles become "[Circular]", bigints strings,
 * Errors their message, Maps objects and Sets arrays.
 */
export function safeJsonStringify(value: unknown): string {
  // The objects on the path from the root to the value being replaced: `serialized` is what
  // JSON.stringify walks (and passes as `this`), `original` what the caller gave us.
  const path: { serialized: object; original: object }[] = [];
  const text = JSON.stringify(value, function (this: unknown, _key, val: unknown) {
    if (typeof val === 'bigint') return val.toString();
    if (typeof val === 'function' || typeof val === 'symbol') return String(val);
    if (val === undefined) return null;
    if (typeof val !== 'object' || val === null) return val;
    while (path.length > 0 && path[path.length - 1].serialized !== this) path.pop();
    if (path.some((p) => p.original === val)) return '[Circular]';
    if (val instanceof Error) return val.message;
    let serialized: object = val;
    if (val instanceof Map) serialized = Object.fromEntries(val);
    else if (val instanceof Set) serialized = [...val];
    path.push({ serialized, original: val });
    return serialized;
  });
  return text ?? 'null';
}

const minSeverityRank: Record<MinSeverity, number> = { info: 0, warning: 1, error: 2 };

/** A klog-like logger writing to opts.sink (default process.stderr). */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const minSeverity = opts.minSeverity ?? 'info';
  const minRank = minSeverityRank[minSeverity];
  if (minRank === undefined) throw new TypeError(`createLogger: minSeverity must be 'info', 'warning' or 'error', not ${JSON.stringify(minSeverity)}`);
  return new StructuredLogger(
    {
      verbosity: opts.verbosity ?? 0,
      minRank,
      format: opts.format ?? 'text',
      sink: opts.sink ?? ((line) => process.stderr.write(`${line}\n`)),
      clock: opts.clock ?? realClock,
      name: opts.name,
      pid: process.pid,
    },
    {},
  );
}

/**
 * What every `@kubelet-ts` library logs to when it is given no logger: warnings and errors (not info,
 * not v(n)) written to process.stderr in klog's text format, so a library used alone is loud when
 * something goes wrong. Pass `logger: noopLogger` for silence, or your own createLogger(...) for more.
 */
export const defaultLogger: Logger = createLogger({ minSeverity: 'warning' });

/** Discards everything; v() is never enabled. */
export const noopLogger: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  v: () => disabledVerboseLogger,
  with: () => noopLogger,
};
