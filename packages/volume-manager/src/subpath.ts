// volumeMount.subPath / subPathExpr (Go: makeMounts in pkg/kubelet/kubelet_pods.go and
// pkg/volume/util/subpath/subpath_linux.go): validation, safe creation of missing directories, and the
// bind mount of the opened subPath that the runtime gets instead of the subPath's own path
// (CVE-2017-1002101: a path checked and then handed over can be swapped for a symlink in between).
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { expand, defaultLogger, errorCode, type Logger } from '@kubelet-ts/core';
import { pathWithinBase } from './mounter.js';
import { goErrnoText, goPathErrorText, validatePathNoBacksteps } from './plugins/host-path.js';
import type { Mounter } from './types.js';

/** Go: containerSubPathDirectoryName, the place for subPath bind mounts in a pod's directory. */
export const CONTAINER_SUBPATH_DIRECTORY_NAME = 'volume-subpaths';

/** open(2)'s O_PATH on Linux (Node's fs.constants lacks it): a descriptor that only names a file. */
const O_PATH = 0o10000000;
/** Go: nofollowFlags, to open the volume's root. */
const NOFOLLOW_FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW;
/** Go: openFDFlags, to open each component without following a symlink (and without blocking on a FIFO). */
const OPEN_FD_FLAGS = O_PATH | fsc.O_NOFOLLOW;

/**
 * Go's ExpandContainerVolumeMounts: expands subPathExpr with the container's environment. A
 * reference to a variable that is unset or empty fails with `missing value for A, B`.
 */
export function expandSubPathExpr(expr: string, env: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const expanded = expand(expr, (name) => {
    const value = env.get(name);
    if (value === undefined || value === '') missing.add(name);
    return value ?? '';
  });
  if (missing.size > 0) throw new Error(`missing value for ${[...missing].sort().join(', ')}`);
  return expanded;
}

/** Where a subPath is bind-mounted for a container, and by what (Go: the rest of subpath.Subpath). */
export interface SubPathBindOptions {
  /** `<podsDir>/<uid>`: the bind mount goes to `<podDir>/volume-subpaths/<volumeName>/<containerName>/<volumeMountIndex>`. */
  podDir: string;
  /** The pod's volume name (volumeMount.name). */
  volumeName: string;
  /** The volumeMount's index in the container's volumeMounts. */
  volumeMountIndex: number;
  /** Does the bind mount, and unmounts one that shows something else. */
  mounter: Mounter;
}

export interface PrepareSubPathOptions {
  /** The volume's host path (MountedVolume.path). */
  volumePath: string;
  /** volumeMount.subPath, or subPathExpr after expandSubPathExpr. */
  subPath: string;
  /** volumeMount.name, for Go's error messages. */
  volumeMountName?: string;
  /** For Go's error messages, and the bind mount's directory. */
  containerName?: string;
  /**
   * Bind-mount the subPath as Go's PrepareSafeSubpath does and return the bind mount's path. Without it
   * only the checks run and the checked path is returned: handing that path to a runtime is open to a
   * symlink swapped in afterwards, so a kubelet always passes this.
   */
  bind?: SubPathBindOptions;
  logger?: Logger;
}

/**
 * Validates subPath, creates it as a directory when missing (never through a symlink that leaves the
 * volume) and, with `bind`, opens it one component at a time from the volume's root without following
 * symlinks, bind-mounts the opened file at `<podDir>/volume-subpaths/<volume>/<container>/<index>` and
 * returns that path (an existing bind mount of the same file is reused). Failures after validation are
 * reported with Go's deliberately vague messages (`failed to prepare subPath for volumeMount "m" of
 * container "c"`) so that host paths do not leak into pod events; the detail is the error's `cause`
 * and is logged.
 */
export async function prepareSubPath(opts: PrepareSubPathOptions): Promise<string> {
  const { volumePath, subPath } = opts;
  const logger = opts.logger ?? defaultLogger;
  const mountName = opts.volumeMountName ?? '';
  const containerName = opts.containerName ?? '';
  if (subPath === '') return volumePath;
  if (path.isAbsolute(subPath)) throw new Error(`error SubPath \`${subPath}\` must not be an absolute path`);
  const backsteps = validatePathNoBacksteps(subPath);
  if (backsteps) throw new Error(`unable to provision SubPath \`${subPath}\`: ${backsteps}`);

  const hostPath = path.join(volumePath, subPath);
  let subPathExists: boolean | undefined;
  try {
    await fsp.stat(hostPath);
    subPathExists = true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') subPathExists = false;
    else logger.error('Could not determine if subPath exists, will not attempt to change its permissions', err, { path: hostPath });
  }
  if (subPathExists === false) {
    // Created now, with the volume's own mode, so that it is not auto-created later by the runtime
    // with a mode the pod's fsGroup cannot use.
    let perm: number;
    try {
      perm = (await fsp.stat(volumePath)).mode & 0o7777;
    } catch (err) {
      throw new Error(goPathErrorText(err), { cause: err });
    }
    try {
      await safeMakeDir(subPath, volumePath, perm);
    } catch (err) {
      logger.error('Failed to create subPath directory for volumeMount', err, { volumeMount: mountName, container: containerName });
      throw new Error(`failed to create subPath directory for volumeMount "${mountName}" of container "${containerName}"`, { cause: err });
    }
  }

  try {
    if (opts.bind) return await bindSubPath({ ...opts.bind, containerName, volumePath, path: hostPath }, { logger });
    return await resolveSubPath(hostPath, volumePath);
  } catch (err) {
    logger.error('Failed to prepare subPath for volumeMount', err, { volumeMount: mountName, container: containerName });
    throw new Error(`failed to prepare subPath for volumeMount "${mountName}" of container "${containerName}"`, { cause: err });
  }
}

/** Go's subpath.Subpath: one volumeMount's subPath of one container. */
export interface SubPath extends SubPathBindOptions {
  /** The volume's host path. */
  volumePath: string;
  /** The subPath's host path (volumePath joined with subPath). */
  path: string;
  containerName: string;
}

/**
 * Seams for tests that race a symlink swap against the open: called before each component is opened
 * and after the last one is, before the bind mount.
 */
export interface BindSubPathHooks {
  logger?: Logger;
  /** Before the component at `current` (a host path inside the volume) is opened. */
  beforeOpen?: (current: string) => Promise<void> | void;
  /** The subPath is open; the bind mount comes next. */
  beforeMount?: () => Promise<void> | void;
}

/** Go: getSubpathBindTarget. */
export function subPathBindTarget(sp: Pick<SubPath, 'podDir' | 'volumeName' | 'containerName' | 'volumeMountIndex'>): string {
  // containerName is a DNS label, i.e. safe as a directory name.
  return path.join(sp.podDir, CONTAINER_SUBPATH_DIRECTORY_NAME, sp.volumeName, sp.containerName, String(sp.volumeMountIndex));
}

/** Resolves both paths once for all later steps, as Go's doBindSubPath does. */
async function evalSymlinks(volumePath: string, subPathPath: string): Promise<{ realVolume: string; realPath: string }> {
  let realVolume: string;
  let realPath: string;
  try {
    realVolume = await fsp.realpath(volumePath);
  } catch (err) {
    throw new Error(`error resolving symlinks in "${volumePath}": ${goPathErrorText(err)}`, { cause: err });
  }
  try {
    realPath = await fsp.realpath(subPathPath);
  } catch (err) {
    throw new Error(`error resolving symlinks in "${subPathPath}": ${goPathErrorText(err)}`, { cause: err });
  }
  return { realVolume, realPath };
}

/** Go's safeOpenSubPath: the subPath opened from the volume's root, never through a symlink. */
async function safeOpenSubPath(realPath: string, realVolume: string, hooks: BindSubPathHooks): Promise<fsp.FileHandle> {
  if (!pathWithinBase(realPath, realVolume)) throw new Error(`subpath "${realPath}" not within volume path "${realVolume}"`);
  try {
    return await doSafeOpen(realPath, realVolume, hooks);
  } catch (err) {
    throw new Error(`error opening subpath ${realPath}: ${(err as Error).message}`, { cause: err });
  }
}

/** Go's doBindSubPath up to the bind mount, for the check-only mode: resolve both paths, then safeOpenSubPath's checks. */
async function resolveSubPath(subPathPath: string, volumePath: string): Promise<string> {
  const { realVolume, realPath } = await evalSymlinks(volumePath, subPathPath);
  const handle = await safeOpenSubPath(realPath, realVolume, {});
  await handle.close();
  return realPath;
}

/**
 * Go's doBindSubPath: resolves the paths, opens the subPath with doSafeOpen and bind-mounts
 * `/proc/<kubelet pid>/fd/<fd>` (which no user can redirect) at the bind target, then checks that the
 * mount shows the opened file (device and inode). A bind mount already there is reused when it shows
 * the same file and replaced otherwise. Returns the bind target.
 */
export async function bindSubPath(sp: SubPath, hooks: BindSubPathHooks = {}): Promise<string> {
  const logger = hooks.logger ?? defaultLogger;
  const { realVolume, realPath } = await evalSymlinks(sp.volumePath, sp.path);
  logger.v(5).info('doBindSubPath', { path: sp.path, resolved: realPath, volumePath: sp.volumePath });
  const resolved: SubPath = { ...sp, volumePath: realVolume, path: realPath };
  const handle = await safeOpenSubPath(realPath, realVolume, hooks);
  try {
    const opened = await handle.stat({ bigint: true });
    const { alreadyMounted, target } = await prepareSubpathTarget(resolved, opened, logger);
    if (alreadyMounted) return target;
    await hooks.beforeMount?.();
    let success = false;
    try {
      const source = `/proc/${process.pid}/fd/${handle.fd}`;
      logger.v(5).info('Bind mounting subPath', { source, target });
      try {
        await sp.mounter.bindMount(source, target);
      } catch (err) {
        throw new Error(`error mounting ${realPath}: ${(err as Error).message}`, { cause: err });
      }
      // Not in Go, which trusts the mount: what is mounted must be what was opened.
      let shown: import('node:fs').BigIntStats;
      try {
        shown = await fsp.lstat(target, { bigint: true });
      } catch (err) {
        throw new Error(`lstat ${target} failed: ${goErrnoText(err)}`, { cause: err });
      }
      if (!sameFile(opened, shown)) throw new Error(`the bind mount at ${target} does not show the opened subpath ${realPath}`);
      success = true;
    } finally {
      if (!success) {
        logger.v(4).info('doBindSubPath() failed, cleaning up subpath', { target });
        await cleanSubPath(sp.mounter, resolved).catch((err: unknown) => logger.error('Failed to clean subpath', err, { path: target }));
      }
    }
    logger.v(3).info('Bound SubPath', { path: realPath, target });
    return target;
  } finally {
    await handle.close();
  }
}

/** Go's os.SameFile: the same device and inode. */
function sameFile(a: import('node:fs').BigIntStats, b: import('node:fs').BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Go's prepareSubpathTarget: reuses a bind mount at the target that shows the opened file (unmounting
 * one that shows something else), otherwise creates the target: a directory for a directory, an empty
 * file for anything else (a file is enough for every kind: the bind mount changes its type).
 */
async function prepareSubpathTarget(sp: SubPath, opened: import('node:fs').BigIntStats, logger: Logger): Promise<{ alreadyMounted: boolean; target: string }> {
  const target = subPathBindTarget(sp);
  let mounted: boolean;
  try {
    mounted = await sp.mounter.isMountPoint(target);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw new Error(`error checking path ${target} for mount: ${goErrnoText(err)}`, { cause: err });
    mounted = false;
  }
  if (mounted) {
    let shown: import('node:fs').BigIntStats;
    try {
      shown = await fsp.lstat(target, { bigint: true });
    } catch (err) {
      throw new Error(`error checking subpath mount info for ${target}: lstat ${target} failed: ${goErrnoText(err)}`, { cause: err });
    }
    if (sameFile(opened, shown)) {
      logger.v(5).info('Skipping bind-mounting subpath: already mounted', { target });
      return { alreadyMounted: true, target };
    }
    try {
      await sp.mounter.unmount(target);
    } catch (err) {
      // Go's typo, kept so that logs read the same.
      throw new Error(`error ummounting ${target}: ${(err as Error).message}`, { cause: err });
    }
  }
  const parent = path.dirname(target);
  try {
    await fsp.mkdir(parent, { recursive: true, mode: 0o750 });
  } catch (err) {
    throw new Error(`error creating directory ${parent}: ${goPathErrorText(err)}`, { cause: err });
  }
  if (opened.isDirectory()) {
    try {
      await fsp.mkdir(target, 0o750);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw new Error(`error creating directory ${target}: ${goPathErrorText(err)}`, { cause: err });
    }
  } else {
    try {
      await fsp.writeFile(target, '', { mode: 0o640 });
    } catch (err) {
      throw new Error(`error creating file ${target}: ${goPathErrorText(err)}`, { cause: err });
    }
  }
  return { alreadyMounted: false, target };
}

/**
 * Go's doSafeOpen: opens pathname (symlinks already resolved) one component at a time from base,
 * each relative to the descriptor of its parent (`/proc/self/fd/<parent>/<name>`, Node's stand-in for
 * openat) with O_NOFOLLOW, refusing a component that is a symlink or leaves base. The returned handle
 * (O_PATH) names exactly what was checked, whatever happens to the paths afterwards.
 */
async function doSafeOpen(pathname: string, base: string, hooks: BindSubPathHooks = {}): Promise<fsp.FileHandle> {
  const cleanPath = path.resolve(pathname);
  const cleanBase = path.resolve(base);
  const rel = path.relative(cleanBase, cleanPath);
  const segments = rel === '' ? [] : rel.split(path.sep);
  // Assumption: base is the only directory under our control; it must not be a symlink.
  let parent: fsp.FileHandle;
  try {
    parent = await fsp.open(cleanBase, NOFOLLOW_FLAGS);
  } catch (err) {
    throw new Error(`cannot open directory ${cleanBase}: ${goErrnoText(err)}`, { cause: err });
  }
  let current = cleanBase;
  try {
    for (const seg of segments) {
      current = path.join(current, seg);
      if (!pathWithinBase(current, cleanBase)) throw new Error(`path ${current} is outside of allowed base ${cleanBase}`);
      await hooks.beforeOpen?.(current);
      let child: fsp.FileHandle;
      try {
        child = await fsp.open(`/proc/self/fd/${parent.fd}/${seg}`, OPEN_FD_FLAGS);
      } catch (err) {
        throw new Error(`cannot open ${current}: ${goErrnoText(err)}`, { cause: err });
      }
      let isSymlink: boolean;
      try {
        isSymlink = (await child.stat()).isSymbolicLink();
      } catch (err) {
        await child.close();
        throw new Error(`error running fstat on ${current} with ${goErrnoText(err)}`, { cause: err });
      }
      if (isSymlink) {
        await child.close();
        throw new Error(`unexpected symlink found ${current}`);
      }
      const done = parent;
      parent = child;
      await done.close();
    }
  } catch (err) {
    await parent.close();
    throw err;
  }
  return parent;
}

/**
 * Go's CleanSubPaths: unmounts and removes every subPath bind mount of one volume of a pod
 * (`<podDir>/volume-subpaths/<volumeName>/<container>/<index>`), then the volume's directory, and
 * `volume-subpaths` itself when it is empty. Nothing there is ever removed recursively: a bind mount
 * that would not go away fails the cleanup rather than expose the volume's files to deletion.
 */
export async function cleanSubPaths(mounter: Mounter, podDir: string, volumeName: string, logger: Logger = defaultLogger): Promise<void> {
  const subPathDir = path.join(podDir, CONTAINER_SUBPATH_DIRECTORY_NAME, volumeName);
  logger.v(4).info('Cleaning up subpath mounts', { dir: subPathDir });
  let containerDirs: import('node:fs').Dirent[];
  try {
    containerDirs = await fsp.readdir(subPathDir, { withFileTypes: true });
  } catch (err) {
    // Normal: no volumeMount of this volume has a subPath.
    if (errorCode(err) === 'ENOENT') return;
    throw new Error(`error reading ${subPathDir}: ${goPathErrorText(err)}`, { cause: err });
  }
  for (const containerDir of containerDirs) {
    if (!containerDir.isDirectory()) {
      logger.v(4).info('Container file is not a directory', { name: containerDir.name });
      continue;
    }
    const fullContainerDirPath = path.join(subPathDir, containerDir.name);
    let entries: string[];
    try {
      entries = await fsp.readdir(fullContainerDirPath);
    } catch (err) {
      throw new Error(`error processing ${fullContainerDirPath}: ${goPathErrorText(err)}`, { cause: err });
    }
    for (const index of entries) {
      try {
        await doCleanSubPath(mounter, fullContainerDirPath, index);
      } catch (err) {
        throw new Error(`error processing ${fullContainerDirPath}: ${(err as Error).message}`, { cause: err });
      }
    }
    try {
      await fsp.rmdir(fullContainerDirPath);
    } catch (err) {
      throw new Error(`error deleting ${fullContainerDirPath}: ${goPathErrorText(err)}`, { cause: err });
    }
  }
  try {
    await fsp.rmdir(subPathDir);
  } catch (err) {
    throw new Error(`error deleting ${subPathDir}: ${goPathErrorText(err)}`, { cause: err });
  }
  // The pod's last volume with subPaths removes volume-subpaths itself.
  const podSubPathDir = path.join(podDir, CONTAINER_SUBPATH_DIRECTORY_NAME);
  try {
    await fsp.rmdir(podSubPathDir);
  } catch (err) {
    const code = errorCode(err);
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT') throw new Error(`error deleting ${podSubPathDir}: ${goPathErrorText(err)}`, { cause: err });
  }
}

/** How many mounts stacked at one subPath target a cleanup takes off before giving up. */
const MAX_STACKED_UNMOUNTS = 8;

/** Go's doCleanSubPath with mount-utils' CleanupMountPoint: unmount (every stacked mount), then remove the file or empty directory. */
async function doCleanSubPath(mounter: Mounter, fullContainerDirPath: string, subPathIndex: string): Promise<void> {
  const fullSubPath = path.join(fullContainerDirPath, subPathIndex);
  try {
    for (let i = 0; await mounter.isMountPoint(fullSubPath); i++) {
      if (i >= MAX_STACKED_UNMOUNTS) throw new Error(`failed to unmount path ${fullSubPath}`);
      await mounter.unmount(fullSubPath);
    }
    let info: import('node:fs').Stats;
    try {
      info = await fsp.lstat(fullSubPath);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return;
      throw err;
    }
    if (info.isDirectory()) await fsp.rmdir(fullSubPath);
    else await fsp.unlink(fullSubPath);
  } catch (err) {
    throw new Error(`error cleaning subpath mount ${fullSubPath}: ${goPathErrorText(err)}`, { cause: err });
  }
}

/** Go's cleanSubPath: one bind mount after a failed doBindSubPath, then its empty parents up to the pod dir. */
async function cleanSubPath(mounter: Mounter, sp: SubPath): Promise<void> {
  const containerDir = path.join(sp.podDir, CONTAINER_SUBPATH_DIRECTORY_NAME, sp.volumeName, sp.containerName);
  await doCleanSubPath(mounter, containerDir, String(sp.volumeMountIndex));
  await removeEmptyDirs(sp.podDir, containerDir);
}

/** Go's removeEmptyDirs: from endDir up to (not including) baseDir, removes each directory while empty. */
async function removeEmptyDirs(baseDir: string, endDir: string): Promise<void> {
  if (!pathWithinBase(endDir, baseDir)) throw new Error(`endDir "${endDir}" is not within baseDir "${baseDir}"`);
  for (let dir = path.resolve(endDir); dir !== path.resolve(baseDir); dir = path.dirname(dir)) {
    try {
      await fsp.rmdir(dir);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT') continue;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') break;
      throw new Error(`error removing directory "${dir}": ${goErrnoText(err)}`, { cause: err });
    }
  }
}

/**
 * Go's SafeMakeDir: creates base/subdir and its missing parents with perm (exactly, despite the
 * umask), refusing when an existing part resolves outside base and never creating through a symlink.
 */
export async function safeMakeDir(subdir: string, base: string, perm: number): Promise<void> {
  let realBase: string;
  try {
    realBase = await fsp.realpath(base);
  } catch (err) {
    throw new Error(`error resolving symlinks in ${base}: ${goPathErrorText(err)}`, { cause: err });
  }
  await doSafeMakeDir(path.join(realBase, subdir), realBase, perm);
}

async function doSafeMakeDir(pathname: string, base: string, perm: number): Promise<void> {
  if (!pathWithinBase(pathname, base)) throw new Error(`path ${pathname} is outside of allowed base ${base}`);
  const info = await fsp.stat(pathname).catch(() => undefined);
  if (info) {
    // It can resolve outside of base, but there is no race-proof check here; resolveSubPath's
    // check of the final path catches that.
    if (info.isDirectory()) return;
    throw Object.assign(new Error(`mkdir ${pathname}: not a directory`), { code: 'ENOTDIR' });
  }

  let existing: string;
  let toCreate: string[];
  try {
    ({ existing, toCreate } = await findExistingPrefix(base, pathname));
  } catch (err) {
    throw new Error(`error opening directory ${pathname}: ${(err as Error).message}`, { cause: err });
  }
  let fullExisting: string;
  try {
    fullExisting = await fsp.realpath(existing);
  } catch (err) {
    throw new Error(`error opening directory ${existing}: ${goPathErrorText(err)}`, { cause: err });
  }
  if (!pathWithinBase(fullExisting, base)) throw new Error(`path ${fullExisting} is outside of allowed base ${base}`);
  let parent: fsp.FileHandle;
  try {
    parent = await doSafeOpen(fullExisting, base);
  } catch (err) {
    throw new Error(`cannot open directory ${existing}: ${(err as Error).message}`, { cause: err });
  }

  // Each directory is created and opened relative to its parent's descriptor (Go: Mkdirat and Openat),
  // so nobody can turn a created directory into a symlink in between.
  let current = fullExisting;
  try {
    for (const dir of toCreate) {
      current = path.join(current, dir);
      const at = `/proc/self/fd/${parent.fd}/${dir}`;
      try {
        // mkdir does not follow a symlink in its last component: a symlink planted here fails with EEXIST.
        await fsp.mkdir(at, perm & 0o777);
      } catch (err) {
        throw new Error(`cannot create directory ${current}: ${goErrnoText(err)}`, { cause: err });
      }
      let child: fsp.FileHandle;
      try {
        child = await fsp.open(at, NOFOLLOW_FLAGS);
      } catch (err) {
        throw new Error(`cannot open ${current}: ${goErrnoText(err)}`, { cause: err });
      }
      const done = parent;
      parent = child;
      await done.close();
      try {
        // mkdir was subject to the umask; the container must get the volume's mode.
        await parent.chmod(perm & 0o7777);
      } catch (err) {
        throw new Error(`chmod "${current}" failed: ${goErrnoText(err)}`, { cause: err });
      }
    }
  } finally {
    await parent.close();
  }
}

/** Go's findExistingPrefix: the deepest existing directory (following symlinks) and what is left to create. */
async function findExistingPrefix(base: string, pathname: string): Promise<{ existing: string; toCreate: string[] }> {
  const rel = path.relative(base, pathname);
  const dirs = rel === '' ? [] : rel.split(path.sep);
  let current = base;
  try {
    await fsp.stat(base);
  } catch (err) {
    throw new Error(`error opening ${base}: ${goErrnoText(err)}`, { cause: err });
  }
  for (let i = 0; i < dirs.length; i++) {
    const next = path.join(current, dirs[i]);
    try {
      await fsp.stat(next);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ENOENT') return { existing: current, toCreate: dirs.slice(i) };
      throw new Error(goErrnoText(err), { cause: err });
    }
    current = next;
  }
  return { existing: pathname, toCreate: [] };
}
