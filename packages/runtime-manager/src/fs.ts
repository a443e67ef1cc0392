// The few file system operations the runtime manager needs (Go: kubecontainer.OSInterface), so
// tests can run without touching /var/log/pods.
import * as fsp from 'node:fs/promises';

export interface RuntimeFs {
  /** mkdir -p with the given mode. */
  mkdirAll(path: string, mode: number): Promise<void>;
  /** Names in a directory; rejects with code ENOENT when it does not exist. */
  readdir(path: string): Promise<string[]>;
  /** Creates (or truncates) an empty file with the given mode. */
  createFile(path: string, mode: number): Promise<void>;
  /** Up to maxBytes from the end of a file; rejects with code ENOENT when it does not exist. */
  readTail(path: string, maxBytes: number): Promise<Buffer>;
  /** A whole file; rejects with code ENOENT when it does not exist. */
  readFile(path: string): Promise<Buffer>;
  /** Writes (creating or truncating) a file and sets its mode, whatever the umask. */
  writeFile(path: string, data: Buffer | string, mode: number): Promise<void>;
}

const GO_ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
};

/** The error with Go's *PathError text (`open /etc/hosts: no such file or directory`) when the errno is a common one. */
function goPathError(op: string, path: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
  const text = GO_ERRNO_TEXT[code];
  return text ? Object.assign(new Error(`${op} ${path}: ${text}`), { code }) : err;
}

export const nodeFs: RuntimeFs = {
  async mkdirAll(path, mode) {
    await fsp.mkdir(path, { recursive: true, mode });
  },
  async readdir(path) {
    return fsp.readdir(path);
  },
  async createFile(path, mode) {
    const handle = await fsp.open(path, 'w', mode);
    await handle.close();
    await fsp.chmod(path, mode);
  },
  async readTail(path, maxBytes) {
    const handle = await fsp.open(path, 'r');
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, maxBytes);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return buffer;
    } finally {
      await handle.close();
    }
  },
  async readFile(path) {
    try {
      return await fsp.readFile(path);
    } catch (err) {
      throw goPathError('open', path, err);
    }
  },
  async writeFile(path, data, mode) {
    try {
      await fsp.writeFile(path, data, { mode });
      await fsp.chmod(path, mode);
    } catch (err) {
      throw goPathError('open', path, err);
    }
  },
};

