// The real CgroupFs on the cgroup mounts. Reads (files, listings, existence) are synchronous: cgroupfs is made by the
// kernel on read and never waits for a disk, and housekeeping reads every pod cgroup in every hierarchy, where one
// synchronous call costs a fraction of a promise API round trip through the thread pool. Writes, mkdir and rmdir stay
// asynchronous (the kernel may take its time over a limit change or a removal).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import type { CgroupFs } from './types.js';

/** The cgroupfs seam over the real filesystem. Writes go straight to the file, as the kernel wants one write per value. */
export const nodeCgroupFs: CgroupFs = {
  readFile: async (path) => readFileSync(path, 'utf8'),
  writeFile: (path, data) => writeFile(path, data, { flag: 'w' }),
  mkdir: async (path) => {
    await mkdir(path, { mode: 0o755 });
  },
  rmdir: (path) => rmdir(path),
  readdir: async (path) => readdirSync(path),
  exists: async (path) => existsSync(path),
};
