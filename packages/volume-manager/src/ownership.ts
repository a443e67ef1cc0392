// fsGroup ownership of a volume (Go: pkg/volume/volume_linux.go SetVolumeOwnership, with
// ConfigurableFSGroupPolicy on as in v1.20).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { defaultLogger, type Clock, type Logger } from '@kubelet-ts/core';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const S_ISGID = 0o2000;
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** Go warns when a recursive change takes longer than this (kubernetes/kubernetes#69699). */
const SLOW_WARNING_MS = 30_000;

/** What SetVolumeOwnership reads about a file: its raw st_mode and owner. */
export interface OwnershipStat {
  mode: number;
  uid: number;
  gid: number;
}

/** The file operations ownership needs; injectable because chown needs root. */
export interface OwnershipFs {
  lstat(p: string): Promise<OwnershipStat>;
  /** Follows symlinks (the volume root may be one). */
  stat(p: string): Promise<OwnershipStat>;
  readdir(p: string): Promise<string[]>;
  chown(p: string, uid: number, gid: number): Promise<void>;
  chmod(p: string, mode: number): Promise<void>;
}

export const nodeOwnershipFs: OwnershipFs = {
  lstat: (p) => fsp.lstat(p),
  stat: (p) => fsp.stat(p),
  readdir: (p) => fsp.readdir(p),
  chown: (p, uid, gid) => fsp.chown(p, uid, gid),
  chmod: (p, mode) => fsp.chmod(p, mode),
};

/** pod.spec.securityContext.fsGroupChangePolicy. */
export type FSGroupChangePolicy = 'Always' | 'OnRootMismatch' | string;

export interface SetVolumeOwnershipOptions {
  /** Nothing is done without one (Go: a nil fsGroup). */
  fsGroup?: number;
  /** Only `OnRootMismatch` changes anything; unset or anything else means a recursive change. */
  fsGroupChangePolicy?: FSGroupChangePolicy;
  /** The volume is read-only to the pod: group read instead of read-write. */
  readOnly?: boolean;
  fs?: OwnershipFs;
  logger?: Logger;
  /** For the warning about a slow recursive change; without one there is no warning. */
  clock?: Clock;
}

const isDir = (mode: number): boolean => (mode & S_IFMT) === S_IFDIR;
const isSymlink = (mode: number): boolean => (mode & S_IFMT) === S_IFLNK;

/**
 * Makes dir and everything below it group-owned by fsGroup, group-readable/writable (readable only
 * when readOnly), directories group-searchable and setgid so that new files inherit the group.
 * Symlinks are skipped: chmod would change their target, overriding the mode the plugin chose.
 * chown/chmod failures are logged and skipped as in Go; a directory that cannot be read fails the walk.
 */
export async function setVolumeOwnership(dir: string, opts: SetVolumeOwnershipOptions): Promise<void> {
  const { fsGroup } = opts;
  if (fsGroup === undefined || fsGroup === null) return;
  const fs = opts.fs ?? nodeOwnershipFs;
  const logger = opts.logger ?? defaultLogger;
  const readOnly = opts.readOnly ?? false;

  if (opts.fsGroupChangePolicy === 'OnRootMismatch' && !(await requiresPermissionChange(dir, fsGroup, readOnly, fs, logger))) {
    logger.v(3).info('Skipping permission and ownership change for volume', { path: dir });
    return;
  }

  const timer = opts.clock?.setTimeout(() => {
    logger.warn(
      `Setting volume ownership for ${dir} and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699`,
    );
  }, SLOW_WARNING_MS);
  try {
    const rootInfo = await fs.lstat(dir);
    await walkDeep(dir, rootInfo, async (p, info) => changeFilePermission(p, info, fsGroup, readOnly, fs, logger), fs);
  } finally {
    timer?.cancel();
  }
}

/** Children before their directory, as Go's walkDeep, so the root's mode changes last. */
async function walkDeep(
  p: string,
  info: OwnershipStat,
  visit: (p: string, info: OwnershipStat) => Promise<void>,
  fs: OwnershipFs,
): Promise<void> {
  if (isDir(info.mode)) {
    for (const name of await fs.readdir(p)) {
      const child = path.join(p, name);
      let childInfo: OwnershipStat;
      try {
        childInfo = await fs.lstat(child);
      } catch (err) {
        // Gone since readdir: nothing left to change.
        if ((err as { code?: unknown }).code === 'ENOENT') continue;
        throw err;
      }
      await walkDeep(child, childInfo, visit, fs);
    }
  }
  await visit(p, info);
}

async function changeFilePermission(
  p: string,
  info: OwnershipStat,
  fsGroup: number,
  readOnly: boolean,
  fs: OwnershipFs,
  logger: Logger,
): Promise<void> {
  if (isSymlink(info.mode)) return;
  try {
    await fs.chown(p, info.uid, fsGroup);
  } catch (err) {
    logger.error(`Chown failed on ${p}`, err);
  }
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (isDir(info.mode)) mask |= S_ISGID | EXEC_MASK;
  try {
    // Keep the permission, setuid, setgid and sticky bits already there; only add.
    await fs.chmod(p, (info.mode & 0o7777) | mask);
  } catch (err) {
    logger.error(`Chmod failed on ${p}`, err);
  }
}

/** OnRootMismatch: the root already has the group, the permission bits and setgid. */
async function requiresPermissionChange(rootDir: string, fsGroup: number, readOnly: boolean, fs: OwnershipFs, logger: Logger): Promise<boolean> {
  let info: OwnershipStat;
  try {
    info = await fs.stat(rootDir);
  } catch (err) {
    logger.error(`performing recursive ownership change on ${rootDir} because reading permissions of root volume failed`, err);
    return true;
  }
  if (info.gid !== fsGroup) {
    logger.v(4).info('Expected group ownership of volume did not match', { path: rootDir, gid: info.gid });
    return true;
  }
  // A root that is not a directory gets the change anyway.
  if (!isDir(info.mode)) return true;
  const wanted = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  if ((info.mode & wanted) !== wanted || (info.mode & S_ISGID) === 0) {
    logger.v(4).info('Performing recursive ownership change because of mismatching mode', { path: rootDir });
    return true;
  }
  return false;
}
