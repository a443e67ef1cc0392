import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { abortReason, errorText, isNotExist, defaultLogger, rejectOnAbort, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { parseCriLogLine, runtimeapi, type CriLogRecord, type RuntimeService } from '@kubelet-ts/cri-client';
import { followHub, type LogFollower } from './follow-watch.js';
import { findTailLineStartIndex } from './tail.js';

/** Go's logForceCheckPeriod: while following, look for new data at least this often even without a file event. */
export const LOG_FORCE_CHECK_PERIOD_MS = 1000;
/**
 * Go's stateCheckPeriod: while following, ask the runtime whether the container still runs once the
 * log has been idle this long (and once at the first end of file, so a finished container's log
 * returns at once).
 */
export const STATE_CHECK_PERIOD_MS = 5000;

/**
 * The reader's buffer: it starts small (a follower of a quiet log needs little) and doubles while reads fill it, up to
 * this size; a record longer than that grows it further.
 */
const READ_CHUNK_SIZE = 256 * 1024;
const FIRST_READ_SIZE = 16 * 1024;
const EOL = 0x0a;
const SPACE = 0x20;
const DOT = 0x2e;
const EMPTY = Buffer.alloc(0);

/** The options readLogs honours; LogOptions (from parseLogOptions) fits. */
export interface ReadLogsOptions {
  follow?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  /** ms since the epoch. */
  sinceTime?: number;
}

export interface ReadLogsDeps {
  /** Asked whether the container still runs while following. */
  runtime: Pick<RuntimeService, 'containerStatus'>;
  stdout: Writable;
  /** May be the same stream as stdout. */
  stderr: Writable;
  /** For sinceSeconds and every wait while following. Default: the real clock. */
  clock?: Clock;
  logger?: Logger;
  /** Abort when the client went away: the file, watcher and timers are released at once. */
  signal?: AbortSignal;
  /** Default LOG_FORCE_CHECK_PERIOD_MS. */
  pollIntervalMs?: number;
  /** Default STATE_CHECK_PERIOD_MS. */
  stateCheckPeriodMs?: number;
}

/** Go's CRI-internal LogOptions (NewLogOptions): -1 means no limit, since 0 means no bound. */
interface InternalOptions {
  tail: number;
  bytes: number;
  since: number;
  follow: boolean;
  timestamp: boolean;
}

function internalOptions(opts: ReadLogsOptions, nowMs: number): InternalOptions {
  let since = -Infinity;
  if (opts.sinceSeconds !== undefined) since = nowMs - opts.sinceSeconds * 1000;
  if (opts.sinceTime !== undefined && opts.sinceTime > since) since = opts.sinceTime;
  return {
    tail: opts.tailLines ?? -1,
    bytes: opts.limitBytes ?? -1,
    since,
    follow: opts.follow ?? false,
    timestamp: opts.timestamps ?? false,
  };
}

/**
 * Go's timeFormatOut (RFC3339NanoFixed, 2006-01-02T15:04:05.000000000Z07:00): the record's own
 * timestamp with its fraction padded to nine digits, keeping its zone as Go's Format does.
 */
export function formatTimestampFixed(timestamp: string): string {
  const m = /^(.{19})(?:\.(\d+))?(.*)$/.exec(timestamp);
  if (!m) return timestamp;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0').slice(0, 9)}${m[3]}`;
}


/**
 * How often timestamps were parsed, for tests: `dates` counts Date.parse calls (the fast path makes one per distinct
 * second of log and zone), `recordTimes` counts records whose time was computed (only with `since`).
 */
export const timestampParseCounts = { dates: 0, recordTimes: 0 };

interface ParsedLine {
  record: CriLogRecord;
  /** The content bytes exactly as in the file (not round-tripped through a string). */
  content: Buffer;
}

/**
 * Parses a record (without its newline) with cri-client's parser, decoding only the header: the
 * content stays bytes so non-UTF-8 output passes through unchanged, as in Go. The slow path: the scanner
 * below takes the common records without building strings.
 */
function parseLine(line: Buffer): ParsedLine {
  let idx = -1;
  for (let i = 0; i < 3; i++) {
    idx = line.indexOf(SPACE, idx + 1);
    if (idx < 0) break;
  }
  const headerEnd = idx < 0 ? line.length : idx;
  timestampParseCounts.dates++;
  const record = parseCriLogLine(line.toString('utf8', 0, headerEnd));
  return { record, content: idx < 0 ? Buffer.alloc(0) : line.subarray(idx + 1) };
}

/** cri-client's timestamp pattern (RFC3339Nano as the runtimes write it). */
const timestampPattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

/**
 * Finds a record's fields on the bytes, without strings or a date parse per record. Records of one second share
 * their timestamp's `YYYY-MM-DDTHH:MM:SS` and zone: those are validated (with the same pattern and Date.parse as
 * cri-client's parser) once and remembered; a record matching them needs only its fraction's digits checked. A record
 * the scanner does not take (another second or zone, an odd header) goes to cri-client's parser, which decides.
 */
class RecordScanner {
  // The fields of the last record scanned (offsets into its buffer).
  fracStart = 0;
  fracEnd = 0;
  isStderr = false;
  isPartial = false;
  contentStart = 0;
  tsEnd = 0;
  private readonly prefix = Buffer.alloc(19);
  private readonly zone = Buffer.alloc(6);
  private zoneLength = 0;
  private baseMs = 0;
  private cached = false;

  /** Whether [s, e) is a well-formed record the fast path takes; fills the fields. */
  scan(buf: Buffer, s: number, e: number): boolean {
    if (!this.matchTimestamp(buf, s, e) && !(this.learn(buf, s, e) && this.matchTimestamp(buf, s, e))) return false;
    const i = this.tsEnd + 1;
    // "stdout " or "stderr ", then the tag P or F, then a space or the end of the record.
    if (i + 8 > e || buf[i] !== 0x73 || buf[i + 1] !== 0x74 || buf[i + 2] !== 0x64 || buf[i + 6] !== SPACE) return false;
    const a = buf[i + 3];
    const b = buf[i + 4];
    const c = buf[i + 5];
    if (a === 0x6f && b === 0x75 && c === 0x74) this.isStderr = false;
    else if (a === 0x65 && b === 0x72 && c === 0x72) this.isStderr = true;
    else return false;
    const tag = buf[i + 7];
    if (tag === 0x46) this.isPartial = false;
    else if (tag === 0x50) this.isPartial = true;
    else return false;
    if (i + 8 === e) {
      this.contentStart = e;
      return true;
    }
    if (buf[i + 8] !== SPACE) return false;
    this.contentStart = i + 9;
    return true;
  }

  /** The record's time in ms since the epoch (after a successful scan of it). */
  time(buf: Buffer): number {
    timestampParseCounts.recordTimes++;
    let ms = 0;
    let scale = 100;
    for (let i = this.fracStart; i < this.fracEnd && scale >= 1; i++, scale /= 10) ms += ((buf[i] as number) - 0x30) * scale;
    return this.baseMs + ms;
  }

  /** Writes Go's RFC3339NanoFixed form of the record's timestamp and a space into out at pos; returns the new pos. */
  writeFixedTimestamp(buf: Buffer, out: Buffer, pos: number): number {
    this.prefix.copy(out, pos);
    pos += 19;
    out[pos++] = DOT;
    const digits = this.fracEnd - this.fracStart;
    if (digits > 0) buf.copy(out, pos, this.fracStart, this.fracEnd);
    out.fill(0x30, pos + digits, pos + 9);
    pos += 9;
    this.zone.copy(out, pos, 0, this.zoneLength);
    pos += this.zoneLength;
    out[pos++] = SPACE;
    return pos;
  }

  private matchTimestamp(buf: Buffer, s: number, e: number): boolean {
    if (!this.cached || e - s < 20) return false;
    const prefix = this.prefix;
    for (let k = 0; k < 19; k++) if (buf[s + k] !== prefix[k]) return false;
    let i = s + 19;
    this.fracStart = this.fracEnd = i;
    if (buf[i] === DOT) {
      const f = ++i;
      while (i < e && i - f < 10 && isDigit(buf[i])) i++;
      if (i === f || i - f > 9) return false;
      this.fracStart = f;
      this.fracEnd = i;
    }
    const zone = this.zone;
    const zl = this.zoneLength;
    if (i + zl >= e) return false;
    for (let k = 0; k < zl; k++) if (buf[i + k] !== zone[k]) return false;
    i += zl;
    if (buf[i] !== SPACE) return false;
    this.tsEnd = i;
    return true;
  }

  /** Validates the record's timestamp as cri-client does and remembers its second and zone. */
  private learn(buf: Buffer, s: number, e: number): boolean {
    let sp = buf.indexOf(SPACE, s);
    if (sp < 0 || sp > e) sp = e;
    if (sp - s > 40) return false;
    const m = timestampPattern.exec(buf.toString('latin1', s, sp));
    // T24:00:00 is valid only without a fraction: leave it to the full parser.
    if (!m || m[1]!.slice(11, 13) === '24') return false;
    timestampParseCounts.dates++;
    const base = Date.parse(m[1]! + m[3]!);
    if (Number.isNaN(base)) return false;
    this.prefix.write(m[1]!, 'latin1');
    this.zoneLength = this.zone.write(m[3]!, 'latin1');
    this.baseMs = base;
    this.cached = true;
    return true;
  }
}

/** Resolves once the stream can take more, rejects if it closes, errors or the signal aborts. */
function waitForDrain(stream: Writable, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const cleanup = (): void => {
      stream.removeListener('drain', onDrain);
      stream.removeListener('close', onClose);
      stream.removeListener('error', onError);
      signal?.removeEventListener('abort', onAbort);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error('log output stream closed'));
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const onAbort = (): void => {
      cleanup();
      reject(abortReason(signal as AbortSignal));
    };
    stream.once('drain', onDrain);
    stream.once('close', onClose);
    stream.once('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Output is handed to the streams in batches of about this size: one write (one HTTP chunk) per batch, not per line. */
const FLUSH_BYTES = 64 * 1024;
/** A batch smaller than this is written as a copy and the batch buffer kept, rather than a fresh buffer allocated. */
const SMALL_FLUSH_BYTES = 4 * 1024;

/**
 * Go's logWriter: timestamps and the byte limit across both streams; plus backpressure. Records are copied into
 * one batch per stream, flushed when it is full, when the other stream is written, and whenever the reader reaches
 * the end of the file, so a follower sees each line as soon as it is read to the end.
 */
class LogWriter {
  remain: number;
  isNewLine = true;
  /** The stream the batch is for. */
  stream: Writable | undefined;
  private out: Buffer = EMPTY;
  pos = 0;

  constructor(
    private readonly signal: AbortSignal | undefined,
    bytes: number,
  ) {
    this.remain = bytes >= 0 ? bytes : Infinity;
  }

  /** Room for n more bytes in the batch. */
  private reserve(n: number): Buffer {
    if (this.pos + n > this.out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(FLUSH_BYTES + 1024, this.pos + n));
      this.out.copy(bigger, 0, 0, this.pos);
      this.out = bigger;
    }
    return this.out;
  }

  /** Appends src[start, end), cut at the byte limit. */
  append(src: Buffer, start: number, end: number): void {
    let n = end - start;
    if (n > this.remain) n = this.remain;
    if (n <= 0) return;
    const out = this.reserve(n);
    // A short record byte by byte: Buffer#copy's own cost is more than the copy's.
    if (n <= 64) for (let i = 0; i < n; i++) out[this.pos + i] = src[start + i] as number;
    else out.set(src.subarray(start, start + n), this.pos);
    this.pos += n;
    this.remain -= n;
  }

  appendNewline(): void {
    if (this.remain <= 0) return;
    this.reserve(1)[this.pos++] = EOL;
    this.remain--;
  }

  /** Appends the timestamp the scanner found in src, as Go's RFC3339NanoFixed and a space. */
  appendTimestamp(scanner: RecordScanner, src: Buffer): void {
    if (this.remain <= 0) return;
    const out = this.reserve(40);
    const end = scanner.writeFixedTimestamp(src, out, this.pos);
    const n = Math.min(end - this.pos, this.remain);
    this.pos += n;
    this.remain -= n;
  }

  /** Writes the batch to its stream (the stream keeps the buffer; a small batch goes as a copy). */
  async flush(): Promise<void> {
    const stream = this.stream;
    if (!stream || this.pos === 0) return;
    let chunk: Buffer;
    if (this.pos < SMALL_FLUSH_BYTES) {
      chunk = Buffer.from(this.out.subarray(0, this.pos));
    } else {
      chunk = this.out.subarray(0, this.pos);
      this.out = EMPTY;
    }
    this.pos = 0;
    if (stream.destroyed || stream.writableEnded) throw new Error('log output stream closed');
    if (!stream.write(chunk)) await waitForDrain(stream, this.signal);
  }

  /** Drops the batch buffer while idle (a follower waiting for data). */
  release(): void {
    if (this.pos === 0) this.out = EMPTY;
  }
}

/**
 * Reads a file in large chunks into one buffer; the caller takes the records off [start, end) and the rest (an
 * incomplete record) moves to the front before the next read.
 */
class ChunkReader {
  buf: Buffer = EMPTY;
  /** The unconsumed bytes are buf[start, end). */
  start = 0;
  end = 0;
  /** Offset in the file of the next byte to read. */
  position: number;
  /** clock.now() when data last arrived. */
  lastDataAt: number;
  /** The last read filled the buffer: there is probably more, read more at once. */
  private lastReadFull = false;

  constructor(
    readonly file: FileHandle,
    start: number,
    private readonly clock: Clock,
  ) {
    this.position = start;
    this.lastDataAt = clock.now();
  }

  /** Reads more after the unconsumed bytes; returns how many (0 at end of file). */
  async fill(): Promise<number> {
    if (this.start > 0) {
      this.buf.copyWithin(0, this.start, this.end);
      this.end -= this.start;
      this.start = 0;
    }
    if (this.end === this.buf.length || (this.lastReadFull && this.buf.length < READ_CHUNK_SIZE)) {
      const bigger = Buffer.allocUnsafe(Math.max(FIRST_READ_SIZE, this.buf.length * 2));
      this.buf.copy(bigger, 0, 0, this.end);
      this.buf = bigger;
    }
    const room = this.buf.length - this.end;
    const { bytesRead } = await this.file.read(this.buf, this.end, room, this.position);
    this.lastReadFull = bytesRead === room;
    if (bytesRead > 0) {
      this.end += bytesRead;
      this.position += bytesRead;
      this.lastDataAt = this.clock.now();
    }
    return bytesRead;
  }

  /** Drops the buffer while idle, unless it holds an incomplete record. */
  release(): void {
    if (this.start === this.end) {
      this.buf = EMPTY;
      this.start = this.end = 0;
      this.lastReadFull = false;
    }
  }

  /** Starts over from the beginning of the file (it was truncated). */
  rewind(): void {
    this.start = this.end = 0;
    this.position = 0;
  }
}

/** Closes a file handle once, however many paths (abort, finally, rotation) try. */
class OpenFile {
  private closing: Promise<void> | undefined;
  constructor(readonly handle: FileHandle) {}
  close(): Promise<void> {
    this.closing ??= this.handle.close().catch(() => undefined);
    return this.closing;
  }
}

async function openLog(path: string): Promise<OpenFile> {
  try {
    return new OpenFile(await open(path, 'r'));
  } catch (err) {
    throw new Error(`failed to open log file ${JSON.stringify(path)}: ${errorText(err)}`, { cause: err });
  }
}

type StatusRuntime = Pick<RuntimeService, 'containerStatus'>;

/** containerStatus calls in flight, by runtime and container: followers of one container checking at the same tick share one. */
const statusCalls = new WeakMap<StatusRuntime, Map<string, Promise<runtimeapi.ContainerStatusResponse>>>();

/** The container's status, from the call in flight for it if there is one (never a finished one). */
function sharedContainerStatus(runtime: StatusRuntime, containerId: string): Promise<runtimeapi.ContainerStatusResponse> {
  let calls = statusCalls.get(runtime);
  if (!calls) statusCalls.set(runtime, (calls = new Map()));
  let call = calls.get(containerId);
  if (!call) {
    const started = runtime.containerStatus(containerId, false);
    const done = (): void => {
      if (calls.get(containerId) === started) calls.delete(containerId);
    };
    started.then(done, done);
    calls.set(containerId, (call = started));
  }
  return call;
}

/** Settles as promise does, or rejects with the signal's reason when it aborts first. */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return signal ? rejectOnAbort(promise, signal) : promise;
}

/**
 * Go's isContainerRunning: a stopped container is not an error (it is the normal way a follow
 * ends); failing to get its status is. Followers of one container asking at once share the call.
 */
async function isContainerRunning(runtime: StatusRuntime, containerId: string, logger: Logger, signal: AbortSignal | undefined): Promise<boolean> {
  const response = await unlessAborted(sharedContainerStatus(runtime, containerId), signal);
  if (!response.status) throw new Error(`container status is nil for ${JSON.stringify(containerId)}`);
  if (response.status.state !== runtimeapi.ContainerState.CONTAINER_RUNNING) {
    logger.v(5).info('Container is not running', { containerId, state: response.status.state });
    return false;
  }
  return true;
}

/**
 * Go's ReadLogs (pkg/kubelet/kuberuntime/logs): writes the CRI log at `path` to stdout and stderr
 * by stream, honouring tailLines, sinceSeconds/sinceTime, limitBytes and timestamps. With follow it
 * waits for new data after the end of the file, moves on to the new file when the log is rotated,
 * and returns once the container stopped running and its last data was written. containerId and
 * runtime are only used with follow.
 *
 * Resolves when done; rejects with the signal's reason when aborted, with an error when the log
 * cannot be read, its first line is not CRI format, an output stream fails, or the runtime cannot
 * tell the container's state. Later malformed lines are logged and skipped.
 */
export async function readLogs(path: string, containerId: string, options: ReadLogsOptions, deps: ReadLogsDeps): Promise<void> {
  const clock = deps.clock ?? realClock;
  const logger = deps.logger ?? defaultLogger;
  const { signal } = deps;
  const pollMs = deps.pollIntervalMs ?? LOG_FORCE_CHECK_PERIOD_MS;
  const stateCheckMs = deps.stateCheckPeriodMs ?? STATE_CHECK_PERIOD_MS;
  const checkAbort = (): void => {
    if (signal?.aborted) throw abortReason(signal);
  };
  checkAbort();
  const opts = internalOptions(options, clock.now());

  // Go resolves symlinks first (fsnotify treats them differently per platform); the log path is
  // owned by the kubelet and the runtime, so following it is safe.
  try {
    path = await realpath(path);
  } catch (err) {
    throw new Error(`failed to try resolving symlinks in path ${JSON.stringify(path)}: ${errorText(err)}`, { cause: err });
  }

  let file = await openLog(path);
  let follower: LogFollower | undefined;
  const onAbort = (): void => {
    follower?.close();
    void file.close();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    checkAbort();
    let start: number;
    try {
      start = await findTailLineStartIndex(file.handle, opts.tail);
    } catch (err) {
      throw new Error(`failed to tail ${opts.tail} lines of log file ${JSON.stringify(path)}: ${errorText(err)}`, { cause: err });
    }
    let reader = new ChunkReader(file.handle, start, clock);
    const writer = new LogWriter(signal, opts.bytes);
    const scanner = new RecordScanner();
    const { stdout, stderr } = deps;
    const hasSince = opts.since > -Infinity;
    const limitedMode = opts.tail >= 0 && !opts.follow;
    let limitedNum = opts.tail;
    let stop = false;
    let found = true;
    let parserChecked = false;
    let lastStateCheck: number | undefined;

    const waitLogs = async (ino: number, dev: number): Promise<boolean> => {
      const idleFor = clock.now() - Math.max(lastStateCheck ?? -Infinity, reader.lastDataAt);
      if (lastStateCheck === undefined || idleFor >= stateCheckMs) {
        lastStateCheck = clock.now();
        if (!(await isContainerRunning(deps.runtime, containerId, logger, signal))) return false;
        checkAbort();
      }
      for (;;) {
        reader.release();
        writer.release();
        const stateDueAt = Math.max(lastStateCheck, reader.lastDataAt) + stateCheckMs;
        const reason = await (follower as LogFollower).wait({ position: reader.position, ino, dev, stateDueAt }, signal);
        if (reason === 'change') return true;
        // Idle for stateCheckPeriod: is the container still there to write more?
        lastStateCheck = clock.now();
        if (!(await isContainerRunning(deps.runtime, containerId, logger, signal))) return false;
        checkAbort();
      }
    };

    for (;;) {
      checkAbort();
      if (stop || (limitedMode && limitedNum <= 0)) {
        await writer.flush();
        logger.v(2).info('Finished parsing log file', { path });
        return;
      }
      let buf = reader.buf;
      let s = reader.start;
      let e = reader.end > s ? buf.indexOf(EOL, s) : -1;
      if (e >= reader.end) e = -1;
      let complete = true;
      if (e >= 0) {
        reader.start = e + 1;
      } else {
        let bytesRead: number;
        try {
          bytesRead = await reader.fill();
        } catch (err) {
          checkAbort();
          throw new Error(`failed to read log file ${JSON.stringify(path)}: ${errorText(err)}`, { cause: err });
        }
        checkAbort();
        if (bytesRead > 0) continue;
        // End of file.
        await writer.flush();
        if (opts.follow) {
          if (!follower) {
            // Data may have arrived before the watch began: read once more before waiting.
            follower = followHub(clock, pollMs).subscribe(path, logger);
            continue;
          }
          const current = await checkFile(path, file.handle, reader.position);
          checkAbort();
          if (current.change === 'replaced') {
            // Rotated: this file is read to its end, go on with the new one from its start.
            let next: OpenFile;
            try {
              next = await openLog(path);
            } catch (err) {
              if (isNotExist((err as Error).cause)) continue;
              throw err;
            }
            const old = file;
            file = next;
            await old.close();
            if (signal?.aborted) await file.close();
            checkAbort();
            logger.v(2).info('Log file was rotated; following the new file', { path });
            reader = new ChunkReader(file.handle, 0, clock);
            continue;
          }
          if (current.change === 'truncated') {
            // copytruncate: the runtime keeps writing the same file from its start.
            logger.v(2).info('Log file was truncated; reading from its start', { path });
            reader.rewind();
            continue;
          }
          // The container stopped and everything up to this end of file (of the newest file) is written.
          if (!found) return;
          found = await waitLogs(current.ino, current.dev);
          continue;
        }
        // Should stop after writing the remaining content.
        stop = true;
        if (reader.start === reader.end) continue;
        buf = reader.buf;
        s = reader.start;
        e = reader.end;
        reader.start = e;
        complete = false;
        logger.info('Incomplete line in log file', { path, line: buf.toString('utf8', s, e) });
      }

      // One record: buf[s, e), without its newline.
      let isStderr: boolean;
      let isPartial: boolean;
      let contentStart: number;
      let record: CriLogRecord | undefined;
      if (scanner.scan(buf, s, e)) {
        ({ isStderr, isPartial, contentStart } = scanner);
      } else {
        let parsed: ParsedLine;
        try {
          parsed = parseLine(buf.subarray(s, e));
        } catch (err) {
          // Go picks the parser from the first line and fails when no format fits it; after that a
          // bad line is only logged.
          if (!parserChecked) {
            throw new Error(`failed to get parse function: unsupported log format: ${JSON.stringify(buf.toString('utf8', s, e))}`, { cause: err });
          }
          logger.error('Failed when parsing line in log file', err, { path, line: buf.toString('utf8', s, e) });
          continue;
        }
        record = parsed.record;
        isStderr = record.stream === 'stderr';
        isPartial = record.tag === 'P';
        contentStart = e - parsed.content.length;
      }
      parserChecked = true;
      // Go keeps the newline of a full record and drops it from a partial one.
      const endsWithNewline = complete && !isPartial;
      if (hasSince && (record ? record.time : scanner.time(buf)) < opts.since) {
        writer.isNewLine = endsWithNewline;
      } else {
        try {
          const stream = isStderr ? stderr : stdout;
          if (stream.destroyed || stream.writableEnded) throw new Error('log output stream closed');
          if (writer.stream !== stream) {
            await writer.flush();
            writer.stream = stream;
          }
          // A partial record continues the line of the one before: only a line's first record gets
          // the timestamp (newer Go; v1.20 stamped every record, splitting lines with timestamps).
          if (opts.timestamp && writer.isNewLine) {
            if (record) {
              const stamp = Buffer.from(`${formatTimestampFixed(record.timestamp)} `);
              writer.append(stamp, 0, stamp.length);
            } else {
              writer.appendTimestamp(scanner, buf);
            }
          }
          writer.isNewLine = endsWithNewline;
          writer.append(buf, contentStart, e);
          if (endsWithNewline) writer.appendNewline();
          if (writer.remain <= 0 || writer.pos >= FLUSH_BYTES) await writer.flush();
        } catch (err) {
          writer.isNewLine = endsWithNewline;
          checkAbort();
          logger.error('Failed when writing line to log file', err, { path });
          throw err;
        }
        if (writer.remain <= 0) {
          logger.v(2).info('Finished parsing log file, hit bytes limit', { path, limit: opts.bytes });
          return;
        }
      }
      if (limitedMode) limitedNum--;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    follower?.close();
    await file.close();
  }
}

/** Whether the file at path is still the open one: replaced (rotation), truncated, or the same. */
async function checkFile(path: string, handle: FileHandle, position: number): Promise<{ change: 'same' | 'replaced' | 'truncated'; ino: number; dev: number }> {
  const current = await handle.stat();
  const { ino, dev } = current;
  try {
    const atPath = await stat(path);
    if (atPath.ino !== ino || atPath.dev !== dev) return { change: 'replaced', ino, dev };
  } catch (err) {
    // Renamed away and the new file not created yet: keep reading the old one.
    if (!isNotExist(err)) throw err;
  }
  return { change: current.size < position ? 'truncated' : 'same', ino, dev };
}
