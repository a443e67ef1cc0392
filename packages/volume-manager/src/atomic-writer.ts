// Atomic projection of a set of files into a directory (Go: pkg/volume/util/atomic_writer.go).
//
// The visible entries of the target directory are symlinks into `..data`, itself a symlink to a
// hidden timestamped directory holding the real files:
//   <dir>/key        -> ..data/key
//   <dir>/..data     -> ..2026_01_01_00_00_00.Ab12Cd
// An update writes a whole new timestamped directory and swaps `..data` by renaming a fresh
// `..data_tmp` symlink over it, so a reader sees either the old or the new set of files, never a
// mix. Names starting with `..` are reserved for the writer. There is no locking: callers serialize.
import * as nodeFs from 'node:fs/promises';
import { posix } from 'node:path';
import { isNotExist, defaultLogger, type Logger } from '@kubelet-ts/core';

const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
const DATA_DIR_NAME = '..data';
const NEW_DATA_DIR_NAME = '..data_tmp';
const TS_DIR_PATTERN = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\./;

/** One file of the payload: its content, its permission bits, and optionally its owner (Go: FsUser). */
export interface FileProjection {
  data: Buffer | string;
  mode: number;
  fsUser?: number;
}

/** The file operations the writer uses; node:fs/promises by default, replaceable to simulate failures. */
export type AtomicWriterFs = Pick<
  typeof nodeFs,
  'readlink' | 'lstat' | 'readFile' | 'readdir' | 'mkdtemp' | 'mkdir' | 'writeFile' | 'chmod' | 'chown' | 'symlink' | 'rename' | 'rm' | 'unlink'
>;

export interface AtomicWriterOptions {
  fs?: AtomicWriterFs;
  /** The time the timestamped directory is named after (UTC). */
  now?: () => Date;
  logger?: Logger;
  /** Prefixed to log lines, as Go's logContext (`pod ns/name volume v`). */
  logContext?: string;
}

/** Go: validatePath; throws Go's message for a path the writer refuses. */
export function validatePath(targetPath: string): void {
  if (targetPath === '') throw new Error('invalid path: must not be empty: ""');
  if (targetPath.startsWith('/')) throw new Error(`invalid path: must be relative path: ${targetPath}`);
  if (Buffer.byteLength(targetPath) > MAX_PATH_LENGTH) throw new Error(`invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`);
  const items = targetPath.split('/');
  for (const item of items) {
    if (item === '..') throw new Error(`invalid path: must not contain '..': ${targetPath}`);
    if (Buffer.byteLength(item) > MAX_FILE_NAME_LENGTH) {
      throw new Error(`invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`);
    }
  }
  if (items[0].startsWith('..') && items[0].length > 2) throw new Error(`invalid path: must not start with '..': ${targetPath}`);
}

/** Go: filepath.Clean for the relative paths validatePath lets through. */
function cleanPath(p: string): string {
  const normalized = posix.normalize(p);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

/** Go: validatePayload: every path valid, then cleaned (`a//b/` -> `a/b`). */
export function validatePayload(payload: Map<string, FileProjection> | Record<string, FileProjection>): Map<string, FileProjection> {
  const entries = payload instanceof Map ? [...payload.entries()] : Object.entries(payload);
  const clean = new Map<string, FileProjection>();
  for (const [path, projection] of entries) {
    validatePath(path);
    clean.set(cleanPath(path), projection);
  }
  return clean;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** `..2006_01_02_15_04_05.` in UTC, the prefix of Go's timestamped directory names. */
function timestampPrefix(d: Date): string {
  return `..${d.getUTCFullYear()}_${pad2(d.getUTCMonth() + 1)}_${pad2(d.getUTCDate())}_${pad2(d.getUTCHours())}_${pad2(d.getUTCMinutes())}_${pad2(d.getUTCSeconds())}.`;
}

export class AtomicWriter {
  private readonly fs: AtomicWriterFs;
  private readonly now: () => Date;
  private readonly logger: Logger;
  private readonly logContext: string;

  constructor(
    readonly targetDir: string,
    opts: AtomicWriterOptions = {},
  ) {
    this.fs = opts.fs ?? nodeFs;
    this.now = opts.now ?? (() => new Date());
    this.logger = opts.logger ?? defaultLogger;
    this.logContext = opts.logContext ?? targetDir;
  }

  /**
   * Projects payload into the target directory; resolves true when the files on disk changed, false
   * when they already held exactly this payload (nothing is written then). Rejects on an invalid
   * path (Go's validatePath text) or a filesystem error; the previous contents stay whole either way.
   */
  async write(payload: Map<string, FileProjection> | Record<string, FileProjection>): Promise<boolean> {
    let clean: Map<string, FileProjection>;
    try {
      clean = validatePayload(payload);
    } catch (err) {
      this.logger.error('Invalid payload', err, { context: this.logContext });
      throw err;
    }

    const dataDirPath = posix.join(this.targetDir, DATA_DIR_NAME);
    let oldTsDir = '';
    try {
      oldTsDir = await this.fs.readlink(dataDirPath);
    } catch (err) {
      if (!isNotExist(err)) {
        this.logger.error('Error reading link for data directory', err, { context: this.logContext });
        throw err;
      }
    }
    const oldTsPath = posix.join(this.targetDir, oldTsDir);

    // Leftovers of a write that died between creating its directory and the swap (Go keeps them
    // forever, and a stale ..data_tmp would make every later swap fail).
    await this.removeStaleLeftovers(oldTsDir);

    let toRemove = new Set<string>();
    if (oldTsDir !== '') {
      toRemove = await this.pathsToRemove(clean, oldTsPath);
      if (!(await this.shouldWritePayload(clean, oldTsPath)) && toRemove.size === 0) {
        this.logger.v(4).info('No update required for target directory', { context: this.logContext, dir: this.targetDir });
        // A crash after the swap may have left visible links missing (Go: issue 121472).
        await this.createUserVisibleFiles(clean);
        return false;
      }
    }

    const tsDir = await this.newTimestampDir();
    const tsDirName = posix.basename(tsDir);
    try {
      await this.writePayloadToDir(clean, tsDir);
    } catch (err) {
      this.logger.error('Error writing payload to ts data directory', err, { context: this.logContext, dir: tsDir });
      await this.fs.rm(tsDir, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
    this.logger.v(4).info('Performed write of new data to ts data directory', { context: this.logContext, dir: tsDir });

    const newDataDirPath = posix.join(this.targetDir, NEW_DATA_DIR_NAME);
    try {
      await this.fs.symlink(tsDirName, newDataDirPath);
    } catch (err) {
      await this.fs.rm(tsDir, { recursive: true, force: true }).catch(() => undefined);
      this.logger.error('Error creating symbolic link for atomic update', err, { context: this.logContext });
      throw err;
    }
    try {
      await this.fs.rename(newDataDirPath, dataDirPath);
    } catch (err) {
      await this.fs.unlink(newDataDirPath).catch(() => undefined);
      await this.fs.rm(tsDir, { recursive: true, force: true }).catch(() => undefined);
      this.logger.error('Error renaming symbolic link for data directory', err, { context: this.logContext, link: newDataDirPath });
      throw err;
    }

    await this.createUserVisibleFiles(clean);
    await this.removeUserVisiblePaths(toRemove);
    if (oldTsDir !== '') {
      try {
        await this.fs.rm(oldTsPath, { recursive: true, force: true });
      } catch (err) {
        this.logger.error('Error removing old data directory', err, { context: this.logContext, dir: oldTsDir });
        throw err;
      }
    }
    return true;
  }

  private async removeStaleLeftovers(currentTsDir: string): Promise<void> {
    let names: string[];
    try {
      names = await this.fs.readdir(this.targetDir);
    } catch (err) {
      if (isNotExist(err)) return;
      throw err;
    }
    for (const name of names) {
      if (name === NEW_DATA_DIR_NAME) {
        await this.fs.unlink(posix.join(this.targetDir, name));
      } else if (name !== posix.basename(currentTsDir) && TS_DIR_PATTERN.test(name)) {
        this.logger.v(2).info('Removing stale ts data directory', { context: this.logContext, dir: name });
        await this.fs.rm(posix.join(this.targetDir, name), { recursive: true, force: true });
      }
    }
  }

  /** Go: shouldWritePayload; only contents count, as modes on disk may carry fsGroup's extra bits. */
  private async shouldWritePayload(payload: Map<string, FileProjection>, oldTsPath: string): Promise<boolean> {
    for (const [path, projection] of payload) {
      const full = posix.join(oldTsPath, path);
      let isFile: boolean;
      try {
        isFile = (await this.fs.lstat(full)).isFile();
      } catch (err) {
        if (isNotExist(err)) return true;
        throw err;
      }
      // A directory where a file belongs now (Go would fail reading it, on every sync).
      if (!isFile) return true;
      const onDisk = await this.fs.readFile(full);
      if (!onDisk.equals(toBuffer(projection.data))) return true;
    }
    return false;
  }

  /** Go: pathsToRemove: what the old version holds that neither the payload nor its parent dirs name. */
  private async pathsToRemove(payload: Map<string, FileProjection>, oldTsPath: string): Promise<Set<string>> {
    const existing: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries: string[];
      try {
        entries = await this.fs.readdir(dir);
      } catch (err) {
        if (isNotExist(err) && rel === '') return;
        throw err;
      }
      for (const name of entries) {
        const relPath = rel === '' ? name : `${rel}/${name}`;
        existing.push(relPath);
        const stat = await this.fs.lstat(posix.join(dir, name));
        if (stat.isDirectory()) await walk(posix.join(dir, name), relPath);
      }
    };
    await walk(oldTsPath, '');

    const wanted = new Set<string>();
    for (const file of payload.keys()) {
      for (let sub = file; sub !== '' && sub !== '.'; sub = posix.dirname(sub)) wanted.add(sub);
    }
    const result = new Set(existing.filter((p) => !wanted.has(p)));
    this.logger.v(5).info('Paths to remove', { context: this.logContext, paths: [...result].sort() });
    return result;
  }

  private async newTimestampDir(): Promise<string> {
    const tsDir = await this.fs.mkdtemp(posix.join(this.targetDir, timestampPrefix(this.now())));
    // 0755 lets group and other traverse the tree whatever the process umask is.
    await this.fs.chmod(tsDir, 0o755);
    return tsDir;
  }

  private async writePayloadToDir(payload: Map<string, FileProjection>, dir: string): Promise<void> {
    for (const [path, projection] of payload) {
      const fullPath = posix.join(dir, path);
      await this.fs.mkdir(posix.dirname(fullPath), { recursive: true, mode: 0o777 });
      const mode = projection.mode & 0o777;
      await this.fs.writeFile(fullPath, toBuffer(projection.data), { mode });
      // open(2) applied the umask; the mode asked for is the mode wanted.
      await this.fs.chmod(fullPath, mode);
      if (projection.fsUser !== undefined) await this.fs.chown(fullPath, projection.fsUser, -1);
    }
  }

  /** Go: createUserVisibleFiles: `<dir>/<first path element>` -> `..data/<first path element>`. */
  private async createUserVisibleFiles(payload: Map<string, FileProjection>): Promise<void> {
    for (const path of payload.keys()) {
      const linkName = path.split('/')[0];
      const visible = posix.join(this.targetDir, linkName);
      try {
        await this.fs.readlink(visible);
      } catch (err) {
        if (!isNotExist(err)) continue;
        await this.fs.symlink(posix.join(DATA_DIR_NAME, linkName), visible);
      }
    }
  }

  /** Go: removeUserVisiblePaths: only top-level links; nested paths went with the old directory. */
  private async removeUserVisiblePaths(paths: Set<string>): Promise<void> {
    let lastErr: unknown;
    for (const p of paths) {
      if (p.includes('/')) continue;
      try {
        await this.fs.unlink(posix.join(this.targetDir, p));
      } catch (err) {
        this.logger.error('Error pruning old user-visible path', err, { context: this.logContext, path: p });
        lastErr = err;
      }
    }
    if (lastErr !== undefined) throw lastErr;
  }
}

function toBuffer(data: Buffer | string): Buffer {
  return typeof data === 'string' ? Buffer.from(data) : data;
}
