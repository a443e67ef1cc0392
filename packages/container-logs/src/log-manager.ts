import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { errorText, isNotExist, defaultLogger, realClock, until, type Clock, type Logger } from '@kubelet-ts/core';
import { runtimeapi, type RuntimeService } from '@kubelet-ts/cri-client';

/** containerLogMaxSize's default, 10Mi. */
export const DEFAULT_CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024;
/** containerLogMaxFiles' default. */
export const DEFAULT_CONTAINER_LOG_MAX_FILES = 5;
/** Go's logMonitorPeriod. */
export const DEFAULT_LOG_MONITOR_PERIOD_MS = 10_000;
/** Suffix of a compressed rotated log. */
export const COMPRESS_SUFFIX = '.gz';
/** Suffix of a file being compressed; left behind only by a failed rotation. */
export const TMP_SUFFIX = '.tmp';

export type LogManagerRuntime = Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>;

export interface ContainerLogManagerOptions {
  runtime: LogManagerRuntime;
  /** Rotate a container's log once it reaches this many bytes. Negative disables rotation. Default 10Mi. */
  maxSize?: number;
  /** Most log files per container, the current one included; at least 2. Default 5. */
  maxFiles?: number;
  clock?: Clock;
  logger?: Logger;
  /** How often logs are checked. Default 10 s. */
  monitorPeriodMs?: number;
}

/** What the kubelet uses of the container log manager (Go's ContainerLogManager interface). */
export interface LogManager {
  /** Starts checking logs every monitor period; returns at once. */
  start(): void;
  /** Stops the loop; resolves when a pass in progress has finished. */
  stop(): Promise<void>;
  /** Removes all log files of a container, rotated ones included. */
  clean(containerId: string): Promise<void>;
}

/** An options value out of range; `field` names the option. */
export class ContainerLogManagerOptionsError extends Error {
  override readonly name = 'ContainerLogManagerOptionsError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** Go's timestampFormat "20060102-150405" for the rotated log suffix, in UTC. */
export function formatRotationTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
}

/** Byte order, as Go's sort.Strings. */
const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The files named `<log>.*` (Go's filepath.Glob(log + ".*")), as full paths. Read with readdir rather
 * than a glob so characters special to globs in the path need no escaping.
 */
async function listRotated(log: string): Promise<string[]> {
  const dir = dirname(log);
  const prefix = `${basename(log)}.`;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new Error(`failed to list all log files with pattern ${JSON.stringify(`${log}.*`)}: ${errorText(err)}`, { cause: err });
  }
  return names.filter((name) => name.startsWith(prefix)).map((name) => join(dir, name));
}

/** Go's isInUse: temporary files are not; compressed ones are; an uncompressed one whose .gz exists is not. */
function isInUse(log: string, logs: readonly string[]): boolean {
  if (log.endsWith(TMP_SUFFIX)) return false;
  if (log.endsWith(COMPRESS_SUFFIX)) return true;
  return !logs.includes(log + COMPRESS_SUFFIX);
}

/** Go's filterUnusedLogs. */
export function filterUnusedLogs(logs: readonly string[]): { inuse: string[]; unused: string[] } {
  const inuse: string[] = [];
  const unused: string[] = [];
  for (const log of logs) (isInUse(log, logs) ? inuse : unused).push(log);
  return { inuse, unused };
}

/** Go's GetAllLogs: the rotated logs still in use, oldest first, then the current log. */
export async function getAllLogs(log: string): Promise<string[]> {
  const { inuse } = filterUnusedLogs(await listRotated(log));
  return [...inuse.sort(byteOrder), log];
}

/**
 * Go's containerLogManager: every monitor period, each running container's log that reached maxSize
 * is rotated: leftovers of failed rotations removed, the oldest rotated logs removed so that at
 * most maxFiles remain with the new one, the remaining rotated logs gzipped, and the current log
 * renamed to `<log>.<YYYYMMDD-hhmmss>` before the runtime is asked to reopen it. One pass at a time;
 * a failure for one container is logged and the others go on.
 */
export class ContainerLogManager implements LogManager {
  private readonly runtime: LogManagerRuntime;
  readonly maxSize: number;
  readonly maxFiles: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly monitorPeriodMs: number;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  /** Serializes rotation passes and clean() (Go's mutex). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: ContainerLogManagerOptions) {
    this.runtime = options.runtime;
    this.maxSize = options.maxSize ?? DEFAULT_CONTAINER_LOG_MAX_SIZE;
    this.maxFiles = options.maxFiles ?? DEFAULT_CONTAINER_LOG_MAX_FILES;
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? defaultLogger;
    this.monitorPeriodMs = options.monitorPeriodMs ?? DEFAULT_LOG_MONITOR_PERIOD_MS;
    if (!Number.isInteger(this.maxFiles) || this.maxFiles <= 1) {
      throw new ContainerLogManagerOptionsError('maxFiles', `invalid MaxFiles ${this.maxFiles}, must be > 1`);
    }
    if (!Number.isInteger(this.maxSize)) {
      throw new ContainerLogManagerOptionsError('maxSize', `invalid max log size ${this.maxSize}, must be an integer number of bytes`);
    }
    if (!(this.monitorPeriodMs > 0)) {
      throw new ContainerLogManagerOptionsError('monitorPeriodMs', `invalid monitor period ${this.monitorPeriodMs}ms, must be > 0`);
    }
  }

  /** False when maxSize is negative: Go then uses a stub manager that never rotates. */
  get rotationEnabled(): boolean {
    return this.maxSize >= 0;
  }

  start(): void {
    if (this.loop || !this.rotationEnabled) return;
    this.logger.info('Initializing container log rotate loop', { monitorPeriodMs: this.monitorPeriodMs });
    const controller = new AbortController();
    this.controller = controller;
    this.loop = until(
      async () => {
        try {
          await this.rotateLogs();
        } catch (err) {
          this.logger.error('Failed to rotate container logs', err);
        }
      },
      this.monitorPeriodMs,
      controller.signal,
      this.clock,
      { logger: this.logger, name: 'container log manager' },
    );
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    await this.loop;
    this.controller = undefined;
    this.loop = undefined;
  }

  /** One pass over the running containers. Throws only when the containers cannot be listed. */
  rotateLogs(): Promise<void> {
    return this.serialized(() => this.rotateAll());
  }

  clean(containerId: string): Promise<void> {
    return this.serialized(async () => {
      let logPath: string;
      try {
        logPath = await this.logPathOf(containerId);
      } catch (err) {
        throw new Error(`failed to get container status ${JSON.stringify(containerId)}: ${errorText(err)}`, { cause: err });
      }
      // Go globs `<log>*`: the current log, rotated and compressed ones, and leftovers.
      const dir = dirname(logPath);
      const prefix = basename(logPath);
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if (isNotExist(err)) return;
        throw err;
      }
      for (const name of names.filter((n) => n.startsWith(prefix))) {
        const file = join(dir, name);
        try {
          await unlink(file);
        } catch (err) {
          if (!isNotExist(err)) throw new Error(`failed to remove container ${JSON.stringify(containerId)} log ${JSON.stringify(file)}: ${errorText(err)}`, { cause: err });
        }
      }
    });
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async logPathOf(containerId: string): Promise<string> {
    const response = await this.runtime.containerStatus(containerId, false);
    if (!response.status) throw new Error(`container status is nil for ${JSON.stringify(containerId)}`);
    return response.status.logPath;
  }

  private async rotateAll(): Promise<void> {
    this.logger.v(4).info('Starting container log rotation sequence');
    let containers: runtimeapi.Container[];
    try {
      containers = await this.runtime.listContainers({});
    } catch (err) {
      throw new Error(`failed to list containers: ${errorText(err)}`, { cause: err });
    }
    for (const container of containers) {
      // Only running containers: a stopped one writes nothing more, an empty current log is no use.
      if (container.state !== runtimeapi.ContainerState.CONTAINER_RUNNING) continue;
      await this.processContainer(container.id);
    }
  }

  private async processContainer(id: string): Promise<void> {
    let path: string;
    try {
      path = await this.logPathOf(id);
    } catch (err) {
      this.logger.error('Failed to get container status', err, { containerID: id });
      return;
    }
    // A container without a log path (no log directory in its sandbox) has nothing to rotate.
    if (!path) return;
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (err) {
      if (!isNotExist(err)) {
        this.logger.error('Failed to stat container log', err, { containerID: id, path });
        return;
      }
      // A rotation whose reopen failed and whose rename back failed too lost the log: ask the
      // runtime to create it again.
      try {
        await this.runtime.reopenContainerLog(id);
      } catch (reopenErr) {
        this.logger.error("Container log doesn't exist, reopen container log failed", reopenErr, { containerID: id, path });
        return;
      }
      try {
        size = (await stat(path)).size;
      } catch (statErr) {
        this.logger.error('Failed to stat container log after reopen', statErr, { containerID: id, path });
        return;
      }
    }
    if (size < this.maxSize) {
      this.logger.v(7).info("log file doesn't need to be rotated", { containerID: id, path, currentSize: size, maxSize: this.maxSize });
      return;
    }
    try {
      await this.rotateLog(id, path);
    } catch (err) {
      this.logger.error('Failed to rotate log for container', err, { containerID: id, path, currentSize: size, maxSize: this.maxSize });
    }
  }

  /** Go's rotateLog for one container's log. */
  async rotateLog(id: string, log: string): Promise<void> {
    let logs = await listRotated(log);
    try {
      logs = await this.cleanupUnusedLogs(logs);
    } catch (err) {
      throw new Error(`failed to cleanup logs: ${errorText(err)}`, { cause: err });
    }
    try {
      logs = await this.removeExcessLogs(logs);
    } catch (err) {
      throw new Error(`failed to remove excess logs: ${errorText(err)}`, { cause: err });
    }
    for (const l of logs) {
      if (l.endsWith(COMPRESS_SUFFIX)) continue;
      try {
        await compressLog(l);
      } catch (err) {
        throw new Error(`failed to compress log ${JSON.stringify(l)}: ${errorText(err)}`, { cause: err });
      }
    }
    try {
      await this.rotateLatestLog(id, log);
    } catch (err) {
      throw new Error(`failed to rotate log ${JSON.stringify(log)}: ${errorText(err)}`, { cause: err });
    }
  }

  /** Removes temporary files and uncompressed logs already compressed, left by failed rotations. */
  private async cleanupUnusedLogs(logs: string[]): Promise<string[]> {
    const { inuse, unused } = filterUnusedLogs(logs);
    for (const l of unused) {
      try {
        await unlink(l);
      } catch (err) {
        throw new Error(`failed to remove unused log ${JSON.stringify(l)}: ${errorText(err)}`, { cause: err });
      }
    }
    return inuse;
  }

  /**
   * Keeps the newest maxFiles-2 rotated logs: with the one about to be rotated and the new current
   * log that makes maxFiles. Oldest first, so a `kubectl logs` reading a newer one is not disturbed.
   */
  private async removeExcessLogs(logs: string[]): Promise<string[]> {
    const sorted = [...logs].sort(byteOrder);
    const maxRotatedFiles = Math.max(0, this.maxFiles - 2);
    const excess = Math.max(0, sorted.length - maxRotatedFiles);
    for (const l of sorted.slice(0, excess)) {
      try {
        await unlink(l);
      } catch (err) {
        throw new Error(`failed to remove old log ${JSON.stringify(l)}: ${errorText(err)}`, { cause: err });
      }
    }
    return sorted.slice(excess);
  }

  /**
   * Renames the current log to `<log>.<timestamp>` uncompressed (the container may still write a
   * last bit to it and log shippers may still be reading it), then has the runtime reopen the log.
   * If the runtime cannot, the rename is undone so the next pass can try again.
   */
  private async rotateLatestLog(id: string, log: string): Promise<void> {
    const rotated = `${log}.${formatRotationTimestamp(this.clock.now())}`;
    try {
      await rename(log, rotated);
    } catch (err) {
      throw new Error(`failed to rotate log ${JSON.stringify(log)} to ${JSON.stringify(rotated)}: ${errorText(err)}`, { cause: err });
    }
    try {
      await this.runtime.reopenContainerLog(id);
    } catch (err) {
      try {
        await rename(rotated, log);
      } catch (renameErr) {
        // Should not happen; if it does the current log is lost until the next pass reopens it.
        this.logger.error('Failed to rename rotated log', renameErr, { rotatedLog: rotated, newLog: log, containerID: id });
      }
      throw new Error(`failed to reopen container log ${JSON.stringify(id)}: ${errorText(err)}`, { cause: err });
    }
  }
}

/** Go's compressLog: gzip to `<log>.tmp` with the log's mode, rename to `<log>.gz`, remove the log. */
async function compressLog(log: string): Promise<void> {
  let mode: number;
  try {
    mode = (await stat(log)).mode & 0o7777;
  } catch (err) {
    throw new Error(`failed to stat log file: ${errorText(err)}`, { cause: err });
  }
  const tmpLog = log + TMP_SUFFIX;
  try {
    try {
      await pipeline(createReadStream(log), createGzip(), createWriteStream(tmpLog, { mode }));
    } catch (err) {
      throw new Error(`failed to compress ${JSON.stringify(log)} to ${JSON.stringify(tmpLog)}: ${errorText(err)}`, { cause: err });
    }
    const compressed = log + COMPRESS_SUFFIX;
    try {
      await rename(tmpLog, compressed);
    } catch (err) {
      throw new Error(`failed to rename ${JSON.stringify(tmpLog)} to ${JSON.stringify(compressed)}: ${errorText(err)}`, { cause: err });
    }
  } finally {
    // Best effort: gone already after a successful rename.
    await rm(tmpLog, { force: true }).catch(() => undefined);
  }
  try {
    await unlink(log);
  } catch (err) {
    throw new Error(`failed to remove log ${JSON.stringify(log)} after compress: ${errorText(err)}`, { cause: err });
  }
}
