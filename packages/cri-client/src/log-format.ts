/**
 * The CRI container log format: one record per line,
 *   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <text>
 * where P marks a partial line continued by the next record of the same stream and F a full line.
 */
export type LogStream = 'stdout' | 'stderr';
export type LogTag = 'P' | 'F';

export interface CriLogRecord {
  /** The timestamp exactly as written, RFC3339 with up to nanosecond precision. */
  timestamp: string;
  /** The timestamp in ms since the epoch. */
  time: number;
  stream: LogStream;
  tag: LogTag;
  /** The text without the trailing newline. */
  text: string;
}

export class CriLogFormatError extends Error {
  constructor(
    readonly reason: string,
    readonly line: string,
    readonly lineNumber?: number,
  ) {
    const where = lineNumber === undefined ? '' : ` at line ${lineNumber}`;
    super(`malformed CRI log record${where}: ${reason}: ${JSON.stringify(line.length > 120 ? line.slice(0, 120) + '...' : line)}`);
    this.name = 'CriLogFormatError';
  }
}

const timestampPattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Formats a time in ms since the epoch (plus optional extra nanoseconds) as RFC3339Nano in UTC.
 * @kubelet-ts/core has the same function; cri-client keeps its own so that it depends on nothing of ours
 * (core brings @kubernetes/client-node, which a CRI-only user should not have to install).
 */
export function formatRFC3339Nano(ms: number, extraNanos = 0): string {
  const whole = Math.floor(ms);
  const iso = new Date(whole).toISOString(); // 2026-01-01T00:00:00.123Z
  const nanos = (whole % 1000) * 1_000_000 + Math.round((ms - whole) * 1_000_000) + extraNanos;
  if (nanos === 0) return iso.slice(0, 19) + 'Z';
  // Go's RFC3339Nano trims trailing zeros from the fraction.
  const fraction = String(nanos).padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}.${fraction}Z`;
}

/** Formats one log record line, including its trailing newline. */
export function formatCriLogLine(time: number, stream: LogStream, tag: LogTag, text: string): string {
  return `${formatRFC3339Nano(time)} ${stream} ${tag} ${text}\n`;
}

/** Parses one record (without its newline). Throws CriLogFormatError naming what is wrong. */
export function parseCriLogLine(line: string, lineNumber?: number): CriLogRecord {
  const first = line.indexOf(' ');
  if (first < 0) throw new CriLogFormatError('missing stream after timestamp', line, lineNumber);
  const timestamp = line.slice(0, first);
  const match = timestampPattern.exec(timestamp);
  if (!match) throw new CriLogFormatError(`timestamp ${JSON.stringify(timestamp)} is not RFC3339Nano`, line, lineNumber);
  const time = Date.parse(match[1] + (match[2] ? match[2].slice(0, 4) : '') + match[3]);
  if (Number.isNaN(time)) throw new CriLogFormatError(`timestamp ${JSON.stringify(timestamp)} is not a valid time`, line, lineNumber);

  const second = line.indexOf(' ', first + 1);
  if (second < 0) throw new CriLogFormatError('missing tag after stream', line, lineNumber);
  const stream = line.slice(first + 1, second);
  if (stream !== 'stdout' && stream !== 'stderr') {
    throw new CriLogFormatError(`stream ${JSON.stringify(stream)} is neither stdout nor stderr`, line, lineNumber);
  }

  // The tag may carry further ':'-separated flags in future formats; the first one is P or F.
  const third = line.indexOf(' ', second + 1);
  const tagField = third < 0 ? line.slice(second + 1) : line.slice(second + 1, third);
  const tag = tagField.split(':')[0];
  if (tag !== 'P' && tag !== 'F') throw new CriLogFormatError(`tag ${JSON.stringify(tagField)} is neither P nor F`, line, lineNumber);
  const text = third < 0 ? '' : line.slice(third + 1);
  return { timestamp, time, stream, tag, text };
}

/** A whole log message: partial records of one stream joined up to and including their full record. */
export interface CriLogEntry {
  timestamp: string;
  time: number;
  stream: LogStream;
  text: string;
  /** True when the source ended while this message was still partial. */
  partial: boolean;
}

export interface ReadCriLogOptions {
  /**
   * Called for each malformed record, which is skipped; reading goes on. Default: one error line on
   * stderr in klog's text format naming the line (`writeCriLogFormatError`); pass `() => {}` to ignore.
   */
  onError?: (error: CriLogFormatError) => void;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * readCriLog's default onError: `E<mmdd hh:mm:ss.uuuuuu> <pid>] "Skipping malformed CRI log record" err="..."`
 * on process.stderr, the klog text format @kubelet-ts/core's loggers write (UTC).
 */
export function writeCriLogFormatError(error: CriLogFormatError, nowMs: number = Date.now()): void {
  const d = new Date(nowMs);
  const header =
    `E${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds() * 1000, 6)} ` +
    `${String(process.pid).padStart(7, ' ')}]`;
  const lineNumber = error.lineNumber === undefined ? '' : ` lineNumber=${error.lineNumber}`;
  process.stderr.write(`${header} ${JSON.stringify('Skipping malformed CRI log record')} err=${JSON.stringify(error.message)}${lineNumber}\n`);
}

/**
 * Streams whole log messages from CRI log data arriving in arbitrary chunks (a file read stream, a
 * socket, ...). Records split across chunks are reassembled, P records are joined per stream, and a
 * malformed record is reported through onError (default: an error line on stderr) and skipped.
 */
export async function* readCriLog(
  source: AsyncIterable<string | Uint8Array>,
  options: ReadCriLogOptions = {},
): AsyncGenerator<CriLogEntry> {
  const decoder = new TextDecoder();
  let buffered = '';
  let lineNumber = 0;
  const pending = new Map<LogStream, CriLogEntry>();

  function* take(line: string): Generator<CriLogEntry> {
    lineNumber++;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line === '') return;
    let record: CriLogRecord;
    try {
      record = parseCriLogLine(line, lineNumber);
    } catch (error) {
      if (error instanceof CriLogFormatError) {
        (options.onError ?? writeCriLogFormatError)(error);
        return;
      }
      throw error;
    }
    const open = pending.get(record.stream);
    const entry: CriLogEntry = open
      ? { ...open, text: open.text + record.text }
      : { timestamp: record.timestamp, time: record.time, stream: record.stream, text: record.text, partial: true };
    if (record.tag === 'P') {
      pending.set(record.stream, entry);
    } else {
      pending.delete(record.stream);
      entry.partial = false;
      yield entry;
    }
  }

  for await (const chunk of source) {
    buffered += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      yield* take(line);
    }
  }
  buffered += decoder.decode();
  if (buffered !== '') yield* take(buffered);
  for (const entry of pending.values()) yield entry;
}
