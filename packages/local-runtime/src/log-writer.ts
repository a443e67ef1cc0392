import { createWriteStream, mkdirSync, openSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { formatCriLogLine, type LogStream, type LogTag } from '@kubelet-ts/cri-client';

/** Longest record text before a line is split into partial (P) records, as containerd and CRI-O do. */
export const MAX_LOG_LINE_BYTES = 16 * 1024;

/** Cuts at most `max` bytes off the front of `data` without splitting a UTF-8 sequence. */
function cutPoint(data: Buffer, max: number): number {
  let cut = max;
  // Back off over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (cut > 0 && (data[cut] & 0xc0) === 0x80) cut--;
  return cut === 0 ? max : cut;
}

/**
 * Splits one output stream into CRI log records: a record per line (tag F), lines longer than
 * MAX_LOG_LINE_BYTES split into P records, and a last line without newline written as F at the end.
 */
export class LineSplitter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly emit: (tag: LogTag, text: string) => void) {}

  push(chunk: Buffer): void {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let start = 0;
    for (;;) {
      const newline = data.indexOf(0x0a, start);
      if (newline < 0) break;
      this.emitLine(data.subarray(start, newline));
      start = newline + 1;
    }
    let rest = data.subarray(start);
    while (rest.length >= MAX_LOG_LINE_BYTES) {
      const cut = cutPoint(rest, MAX_LOG_LINE_BYTES);
      this.emit('P', rest.subarray(0, cut).toString('utf8'));
      rest = rest.subarray(cut);
    }
    // Copy so a small remainder does not keep a large chunk alive.
    this.pending = Buffer.from(rest);
  }

  /** The stream ended: a line still open is written as a full record. */
  end(): void {
    if (this.pending.length > 0) this.emitLine(this.pending);
    this.pending = Buffer.alloc(0);
  }

  private emitLine(line: Buffer): void {
    let rest = line;
    while (rest.length > MAX_LOG_LINE_BYTES) {
      const cut = cutPoint(rest, MAX_LOG_LINE_BYTES);
      this.emit('P', rest.subarray(0, cut).toString('utf8'));
      rest = rest.subarray(cut);
    }
    this.emit('F', rest.toString('utf8'));
  }
}

/** Appends a container's stdout and stderr to its log file in the CRI log format. */
export class ContainerLogWriter {
  private file: WriteStream;
  private closed = false;

  constructor(
    readonly path: string,
    private readonly now: () => number,
  ) {
    this.file = ContainerLogWriter.open(path);
  }

  private static open(path: string): WriteStream {
    mkdirSync(dirname(path), { recursive: true });
    // Open synchronously so a log file that cannot be created fails the caller (StartContainer) at once.
    const fd = openSync(path, 'a');
    const stream = createWriteStream(path, { fd });
    // Errors after opening (disk full, file removed) must not crash the runtime; the log is best effort.
    stream.on('error', () => undefined);
    return stream;
  }

  /** A splitter writing the records of one stream to this log. */
  splitter(stream: LogStream): LineSplitter {
    return new LineSplitter((tag, text) => this.write(stream, tag, text));
  }

  write(stream: LogStream, tag: LogTag, text: string): void {
    if (this.closed) return;
    this.file.write(formatCriLogLine(this.now(), stream, tag, text));
  }

  /** Reopens the file at the same path (after the kubelet rotated it away). */
  async reopen(): Promise<void> {
    if (this.closed) return;
    const old = this.file;
    this.file = ContainerLogWriter.open(this.path);
    await endStream(old);
  }

  /** Flushes and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await endStream(this.file);
  }
}

function endStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.closed) return resolve();
    stream.once('close', () => resolve());
    stream.end();
  });
}
