/**
 * The readLogs implementation before the fast path (commit 1a1d794), kept as the reference the differential test
 * compares the output of every option combination against. Not used by the package.
 */
import { watch, type FSWatcher } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Writable } from 'node:stream';
import { abortReason, errorText, isNotExist, defaultLogger, realClock, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import { parseCriLogLine, runtimeapi, type CriLogRecord, type RuntimeService } from '@kubelet-ts/cri-client';
import { findTailLineStartIndex } from '../src/tail.js';

/** Go's logForceCheckPeriod: while following, look for new data at least this often even without a file event. */
export const LOG_FORCE_CHECK_PERIOD_MS = 1000;
/**
 * Go's stateCheckPeriod: while following, ask the runtime whether the container still runs once the
 * log has been idle this long (and once at the first end of file, so a finished container's log
 * returns at once).
 */
export const STATE_CHECK_PERIOD_MS = 5000;

const READ_CHUNK_SIZE = 64 * 1024;
const EOL = 0x0a;
const SPACE = 0x20;
const NEWLINE = Buffer.from('\n');

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

interface ParsedLine {
  record: CriLogRecord;
  /** The content bytes exactly as in the file (not round-tripped through a string). */
  content: Buffer;
}

/**
 * Parses a record (without its newline) with cri-client's parser, decoding only the header: the
 * content stays bytes so non-UTF-8 output passes through unchanged, as in Go.
 */
function parseLine(line: Buffer): ParsedLine {
  let idx = -1;
  for (let i = 0; i < 3; i++) {
    idx = line.indexOf(SPACE, idx + 1);
    if (idx < 0) break;
  }
  const headerEnd = idx < 0 ? line.length : idx;
  const record = parseCriLogLine(line.toString('utf8', 0, headerEnd));
  return { record, content: idx < 0 ? Buffer.alloc(0) : line.subarray(idx + 1) };
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

/**
 * Go's logWriter: since filter, timestamps, the byte limit across both streams; plus backpressure. Lines are
 * batched per stream and flushed when a batch is full, when the other stream is written, and whenever the reader
 * reaches the end of the file, so a follower sees each line as soon as it is read to the end.
 */
class LogWriter {
  private remain: number;
  private isNewLine = true;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private pendingStream: Writable | undefined;

  constructor(
    private readonly stdout: Writable,
    private readonly stderr: Writable,
    private readonly opts: InternalOptions,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.remain = opts.bytes >= 0 ? opts.bytes : Infinity;
  }

  /** Returns false once the byte limit is reached (Go's errMaximumWrite); the caller flushes. */
  async write(line: ParsedLine, endsWithNewline: boolean): Promise<boolean> {
    const { record, content } = line;
    try {
      if (record.time < this.opts.since) return true;
      const stream = record.stream === 'stdout' ? this.stdout : this.stderr;
      if (stream.destroyed || stream.writableEnded) throw new Error('log output stream closed');
      if (this.pendingStream !== stream) await this.flush();
      this.pendingStream = stream;
      // A partial record continues the line of the one before: only a line's first record gets
      // the timestamp (newer Go; v1.20 stamped every record, splitting lines with timestamps).
      if (this.opts.timestamp && this.isNewLine) this.append(Buffer.from(`${formatTimestampFixed(record.timestamp)} `));
      this.append(content);
      if (endsWithNewline) this.append(NEWLINE);
      if (this.pendingBytes >= FLUSH_BYTES) await this.flush();
      return this.remain > 0;
    } finally {
      this.isNewLine = endsWithNewline;
    }
  }

  /** Writes the batch (a copy: views would keep the reader's chunks alive while the stream buffers them). */
  async flush(): Promise<void> {
    const stream = this.pendingStream;
    if (!stream || this.pendingBytes === 0) return;
    const out = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    if (stream.destroyed || stream.writableEnded) throw new Error('log output stream closed');
    if (!stream.write(out)) await waitForDrain(stream, this.signal);
  }

  private append(part: Buffer): void {
    const take = part.length > this.remain ? part.subarray(0, this.remain) : part;
    if (take.length === 0) return;
    this.pending.push(take);
    this.pendingBytes += take.length;
    this.remain -= take.length;
  }
}

/** Reads a file line by line from a position, keeping an incomplete last line until it completes. */
class LineReader {
  private chunk: Buffer = Buffer.alloc(0);
  private chunkPos = 0;
  private partial: Buffer[] = [];
  private partialLength = 0;
  /** Offset in the file of the next byte to read. */
  position: number;
  /** clock.now() when data last arrived. */
  lastDataAt: number;

  constructor(
    readonly file: FileHandle,
    start: number,
    private readonly clock: Clock,
  ) {
    this.position = start;
    this.lastDataAt = clock.now();
  }

  /** The next complete line without its newline, or undefined at end of file. */
  async readLine(): Promise<Buffer | undefined> {
    for (;;) {
      const eol = this.chunk.indexOf(EOL, this.chunkPos);
      if (eol >= 0) {
        const piece = this.chunk.subarray(this.chunkPos, eol);
        this.chunkPos = eol + 1;
        if (this.partialLength === 0) return piece;
        const line = Buffer.concat([...this.partial, piece], this.partialLength + piece.length);
        this.partial = [];
        this.partialLength = 0;
        return line;
      }
      if (this.chunkPos < this.chunk.length) {
        const rest = this.chunk.subarray(this.chunkPos);
        this.partial.push(rest);
        this.partialLength += rest.length;
      }
      // A fresh buffer per read: lines handed out are views into it.
      const buf = Buffer.allocUnsafe(READ_CHUNK_SIZE);
      const { bytesRead } = await this.file.read(buf, 0, buf.length, this.position);
      this.chunk = buf.subarray(0, bytesRead);
      this.chunkPos = 0;
      if (bytesRead === 0) return undefined;
      this.position += bytesRead;
      this.lastDataAt = this.clock.now();
    }
  }

  /** Takes the incomplete line left at end of file (the file will not grow). */
  takeIncomplete(): Buffer {
    const line = Buffer.concat(this.partial, this.partialLength);
    this.partial = [];
    this.partialLength = 0;
    return line;
  }

  /** Starts over from the beginning of the file (it was truncated). */
  rewind(): void {
    this.takeIncomplete();
    this.chunk = Buffer.alloc(0);
    this.chunkPos = 0;
    this.position = 0;
  }
}

/**
 * Wakes the follower on changes to the log: fs.watch on the log's directory (which also sees the
 * file being replaced by a new one on rotation) plus a poll on the clock, as Go combines fsnotify
 * with logForceCheckPeriod. An event arriving while no one waits is remembered, not lost.
 */
class ChangeNotifier {
  private watcher: FSWatcher | undefined;
  private pending = false;
  private wake: (() => void) | undefined;
  started = false;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  start(path: string): void {
    this.started = true;
    const name = basename(path);
    try {
      this.watcher = watch(dirname(path), (_event, filename) => {
        if (!filename || filename.toString() === name) this.notify();
      });
      this.watcher.on('error', (err) => {
        // Go gives up after a few watch errors; the poll keeps following correct, only slower.
        this.logger.warn('Log file watch failed; polling instead', { path, err: errorText(err) });
        this.closeWatcher();
        this.notify();
      });
    } catch (err) {
      this.logger.warn('Cannot watch log file; polling instead', { path, err: errorText(err) });
    }
  }

  private notify(): void {
    this.pending = true;
    this.wake?.();
  }

  /** Resolves on a change, after pollMs, or rejects when the signal aborts. */
  wait(pollMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      let timer: TimerHandle | undefined = undefined;
      const finish = (): void => {
        timer?.cancel();
        this.wake = undefined;
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        finish();
        reject(abortReason(signal as AbortSignal));
      };
      this.wake = () => {
        finish();
        this.pending = false;
        resolve();
      };
      timer = this.clock.setTimeout(() => {
        finish();
        resolve();
      }, pollMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  close(): void {
    this.closeWatcher();
    this.wake = undefined;
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

/**
 * Go's isContainerRunning: a stopped container is not an error (it is the normal way a follow
 * ends); failing to get its status is.
 */
async function isContainerRunning(
  runtime: Pick<RuntimeService, 'containerStatus'>,
  containerId: string,
  logger: Logger,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const response = await runtime.containerStatus(containerId, false, { signal });
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
  const notifier = new ChangeNotifier(clock, logger);
  const onAbort = (): void => {
    notifier.close();
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
    let reader = new LineReader(file.handle, start, clock);
    const writer = new LogWriter(deps.stdout, deps.stderr, opts, signal);
    const limitedMode = opts.tail >= 0 && !opts.follow;
    let limitedNum = opts.tail;
    let stop = false;
    let found = true;
    let parserChecked = false;
    let lastStateCheck: number | undefined;

    const waitLogs = async (): Promise<boolean> => {
      const idleFor = clock.now() - Math.max(lastStateCheck ?? -Infinity, reader.lastDataAt);
      if (lastStateCheck === undefined || idleFor >= stateCheckMs) {
        lastStateCheck = clock.now();
        if (!(await isContainerRunning(deps.runtime, containerId, logger, signal))) return false;
        checkAbort();
      }
      await notifier.wait(pollMs, signal);
      return true;
    };

    for (;;) {
      checkAbort();
      if (stop || (limitedMode && limitedNum <= 0)) {
        await writer.flush();
        logger.v(2).info('Finished parsing log file', { path });
        return;
      }
      let line: Buffer | undefined;
      try {
        line = await reader.readLine();
      } catch (err) {
        checkAbort();
        throw new Error(`failed to read log file ${JSON.stringify(path)}: ${errorText(err)}`, { cause: err });
      }
      checkAbort();
      let complete = true;
      if (line === undefined) {
        await writer.flush();
        if (opts.follow) {
          if (!notifier.started) {
            // Data may have arrived before the watch began: read once more before waiting.
            notifier.start(path);
            continue;
          }
          const change = await checkFile(path, file.handle, reader.position);
          checkAbort();
          if (change === 'replaced') {
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
            reader = new LineReader(file.handle, 0, clock);
            continue;
          }
          if (change === 'truncated') {
            // copytruncate: the runtime keeps writing the same file from its start.
            logger.v(2).info('Log file was truncated; reading from its start', { path });
            reader.rewind();
            continue;
          }
          // The container stopped and everything up to this end of file (of the newest file) is written.
          if (!found) return;
          found = await waitLogs();
          continue;
        }
        // Should stop after writing the remaining content.
        stop = true;
        line = reader.takeIncomplete();
        if (line.length === 0) continue;
        complete = false;
        logger.info('Incomplete line in log file', { path, line: line.toString('utf8') });
      }

      let parsed: ParsedLine;
      try {
        parsed = parseLine(line);
        parserChecked = true;
      } catch (err) {
        // Go picks the parser from the first line and fails when no format fits it; after that a
        // bad line is only logged.
        if (!parserChecked) {
          throw new Error(`failed to get parse function: unsupported log format: ${JSON.stringify(line.toString('utf8'))}`, { cause: err });
        }
        logger.error('Failed when parsing line in log file', err, { path, line: line.toString('utf8') });
        continue;
      }
      // Go keeps the newline of a full record and drops it from a partial one.
      const endsWithNewline = complete && parsed.record.tag === 'F';
      let more: boolean;
      try {
        more = await writer.write(parsed, endsWithNewline);
        if (!more) await writer.flush();
      } catch (err) {
        checkAbort();
        logger.error('Failed when writing line to log file', err, { path });
        throw err;
      }
      if (!more) {
        logger.v(2).info('Finished parsing log file, hit bytes limit', { path, limit: opts.bytes });
        return;
      }
      if (limitedMode) limitedNum--;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    notifier.close();
    await file.close();
  }
}

/** Whether the file at path is still the open one: replaced (rotation), truncated, or the same. */
async function checkFile(path: string, handle: FileHandle, position: number): Promise<'same' | 'replaced' | 'truncated'> {
  const current = await handle.stat();
  try {
    const atPath = await stat(path);
    if (atPath.ino !== current.ino || atPath.dev !== current.dev) return 'replaced';
  } catch (err) {
    // Renamed away and the new file not created yet: keep reading the old one.
    if (!isNotExist(err)) throw err;
  }
  return current.size < position ? 'truncated' : 'same';
}
