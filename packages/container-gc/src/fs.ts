// The file operations container GC needs (Go: kubecontainer.OSInterface), so tests can fake them.
import * as fsp from 'node:fs/promises';

export interface ContainerGCFs {
  /** Names in a directory; rejects with code ENOENT when it does not exist. */
  readdir(path: string): Promise<string[]>;
  /** rm -rf. */
  removeAll(path: string): Promise<void>;
  /** Removes one file; rejects with code ENOENT when it does not exist. */
  remove(path: string): Promise<void>;
}

export const nodeGCFs: ContainerGCFs = {
  readdir: (path) => fsp.readdir(path),
  removeAll: (path) => fsp.rm(path, { recursive: true, force: true }),
  remove: (path) => fsp.unlink(path),
};

