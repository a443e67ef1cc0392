// volumeMount.subPath / subPathExpr (Go: makeMounts in pkg/kubelet/kubelet_pods.go and
// pkg/volume/util/subpath/subpath_linux.go): validation, safe creation of missing directories and
// the check that what gets mounted stays inside the volume.
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { expand, defaultLogger, type Logger } from '@kubelet-ts/core';
import { pathWithinBase } from './mounter.js';
import { goErrnoText, goPathErrorText, validatePathNoBacksteps } from './plugins/host-path.js';

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

export interface PrepareSubPathOptions {
  /** The volume's host path (MountedVolume.path). */
  volumePath: string;
  /** volumeMount.subPath, or subPathExpr after expandSubPathExpr. */
  subPath: string;
  /** volumeMount.name, for Go's error messages. */
  volumeMountName?: string;
  /** For Go's error messages. */
  containerName?: string;
  logger?: Logger;
}

/**
 * Validates subPath, creates it as a directory when missing (never through a symlink that leaves
 * the volume), and returns the host path to bind-mount: subPath with every symlink resolved, which
 * is checked to be inside the volume. Failures after validation are reported with Go's
 * deliberately vague messages (`failed to prepare subPath for volumeMount "m" of container "c"`)
 * so that host paths do not leak into pod events; the detail is the error's `cause` and is logged.
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
    return await resolveSubPath(hostPath, volumePath);
  } catch (err) {
    logger.error('Failed to prepare subPath for volumeMount', err, { volumeMount: mountName, container: containerName });
    throw new Error(`failed to prepare subPath for volumeMount "${mountName}" of container "${containerName}"`, { cause: err });
  }
}

/** Go's doBindSubPath up to the bind mount: resolve both paths, then safeOpenSubPath's checks. */
async function resolveSubPath(subPathPath: string, volumePath: string): Promise<string> {
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
  if (!pathWithinBase(realPath, realVolume)) throw new Error(`subpath "${realPath}" not within volume path "${realVolume}"`);
  try {
    await checkNoSymlinks(realPath, realVolume);
  } catch (err) {
    throw new Error(`error opening subpath ${realPath}: ${(err as Error).message}`, { cause: err });
  }
  return realPath;
}

/**
 * Go's doSafeOpen without keeping the descriptor: every component from base down to pathname is
 * looked at without following symlinks, so a component swapped for a symlink since the paths were
 * resolved is caught.
 */
async function checkNoSymlinks(pathname: string, base: string): Promise<void> {
  const cleanBase = path.resolve(base);
  const rel = path.relative(cleanBase, path.resolve(pathname));
  let current = cleanBase;
  const baseInfo = await fsp.lstat(cleanBase).catch((err: unknown) => {
    throw new Error(`cannot open directory ${cleanBase}: ${goErrnoText(err)}`, { cause: err });
  });
  if (baseInfo.isSymbolicLink()) throw new Error(`cannot open directory ${cleanBase}: too many levels of symbolic links`);
  for (const seg of rel === '' ? [] : rel.split(path.sep)) {
    current = path.join(current, seg);
    if (!pathWithinBase(current, cleanBase)) throw new Error(`path ${current} is outside of allowed base ${cleanBase}`);
    const info = await fsp.lstat(current).catch((err: unknown) => {
      throw new Error(`cannot open ${current}: ${goErrnoText(err)}`, { cause: err });
    });
    if (info.isSymbolicLink()) throw new Error(`unexpected symlink found ${current}`);
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
  try {
    await checkNoSymlinks(fullExisting, base);
  } catch (err) {
    throw new Error(`cannot open directory ${existing}: ${(err as Error).message}`, { cause: err });
  }

  let current = fullExisting;
  for (const dir of toCreate) {
    current = path.join(current, dir);
    try {
      // mkdir does not follow a symlink in its last component: a symlink planted here fails with EEXIST.
      await fsp.mkdir(current, perm & 0o777);
    } catch (err) {
      throw new Error(`cannot create directory ${current}: ${goErrnoText(err)}`, { cause: err });
    }
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(current, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_DIRECTORY);
    } catch (err) {
      throw new Error(`cannot open ${current}: ${goErrnoText(err)}`, { cause: err });
    }
    try {
      // mkdir was subject to the umask; the container must get the volume's mode.
      await handle.chmod(perm & 0o7777);
    } catch (err) {
      throw new Error(`chmod "${current}" failed: ${goErrnoText(err)}`, { cause: err });
    } finally {
      await handle.close();
    }
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
