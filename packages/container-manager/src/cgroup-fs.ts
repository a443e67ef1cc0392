// The real CgroupFs: node:fs/promises on the cgroup mounts.
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import type { CgroupFs } from './types.js';

/** The cgroupfs seam over the real filesystem. Writes go straight to the file, as the kernel wants one write per value. */
export const nodeCgroupFs: CgroupFs = {
  readFile: (path) => readFile(path, 'utf8'),
  writeFile: (path, data) => writeFile(path, data, { flag: 'w' }),
  mkdir: async (path) => {
    await mkdir(path, { mode: 0o755 });
  },
  rmdir: (path) => rmdir(path),
  readdir: (path) => readdir(path),
  exists: async (path) => {
    try {
      await access(path);
      return true;
    } catch {
      return false;
    }
  },
};
