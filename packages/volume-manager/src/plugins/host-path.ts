// kubernetes.io/host-path (Go: pkg/volume/hostpath/host_path.go, v1.20): the host path itself is
// what containers get, after the checks its `type` asks for.
import { constants as fsc, promises as fsp } from 'node:fs';
import type { V1Volume } from '@kubernetes/client-node';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../types.js';

export const HOST_PATH_PLUGIN_NAME = 'kubernetes.io/host-path';

/** Go's syscall error texts for the errno codes a path operation commonly fails with. */
const errnoText: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'file exists',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'file name too long',
  EBUSY: 'device or resource busy',
  ENOTEMPTY: 'directory not empty',
  EINVAL: 'invalid argument',
  EIO: 'input/output error',
};

/** The errno part of a Node fs error as Go's syscall.Errno prints it (`permission denied`). */
export function goErrnoText(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.code === 'string' && e.code in errnoText) return errnoText[e.code];
  return e instanceof Error ? e.message : String(err);
}

/**
 * A Node fs error as Go prints an *os.PathError: `mkdir /x/y: permission denied`, so that event
 * messages read as the Go kubelet's. Other errors keep their message.
 */
export function goPathErrorText(err: unknown): string {
  const e = err as { code?: unknown; syscall?: unknown; path?: unknown; message?: unknown } | null;
  if (e && typeof e.code === 'string' && typeof e.syscall === 'string' && typeof e.path === 'string') {
    const text = errnoText[e.code] ?? e.code;
    return `${e.syscall} ${e.path}: ${text}`;
  }
  return e instanceof Error ? e.message : String(err);
}

/** An Error whose message is goPathErrorText(err), keeping err as cause and its code. */
export function goPathError(err: unknown): Error {
  const code = (err as { code?: unknown } | null)?.code;
  return Object.assign(new Error(goPathErrorText(err), { cause: err }), typeof code === 'string' ? { code } : {});
}

/** Go's validation.ValidatePathNoBacksteps: the error text, or undefined when p has no `..` element. */
export function validatePathNoBacksteps(p: string): string | undefined {
  return p.split('/').includes('..') ? "must not contain '..'" : undefined;
}

/** Go's hostutil.FileType. */
export type HostFileType = 'Directory' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/** What the checks read about a path (fs.Stats fits). */
export interface HostPathStat {
  isDirectory(): boolean;
  isFile(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}

/** Follows symlinks like Go's os.Stat; injectable so a test can present a block device. */
export type StatFn = (p: string) => Promise<HostPathStat>;

const defaultStat: StatFn = (p) => fsp.stat(p);

/** Go's hostutil PathExists: a stat error other than not-exist counts as not existing for the checks. */
async function exists(p: string, stat: StatFn): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/** Go's hostutil GetFileType; rejects when the path is missing or of another kind (a fifo). */
export async function getFileType(p: string, stat: StatFn = defaultStat): Promise<HostFileType> {
  let info: HostPathStat;
  try {
    info = await stat(p);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') throw new Error(`path "${p}" does not exist`);
    throw goPathError(err);
  }
  if (info.isDirectory()) return 'Directory';
  if (info.isFile()) return 'File';
  if (info.isSocket()) return 'Socket';
  if (info.isCharacterDevice()) return 'CharDevice';
  if (info.isBlockDevice()) return 'BlockDevice';
  throw new Error('only recognise file, directory, socket, block device and character device');
}

async function isType(p: string, want: HostFileType, stat: StatFn): Promise<boolean> {
  try {
    return (await getFileType(p, stat)) === want;
  } catch {
    return false;
  }
}

/** Go's makeDir: MkdirAll 0755 (under the umask); an existing path is not an error here. */
async function makeDir(p: string): Promise<void> {
  try {
    await fsp.mkdir(p, { recursive: true, mode: 0o755 });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EEXIST') throw goPathError(err);
  }
}

/** Go's makeFile: open(O_CREAT, 0644) without truncating; an existing path is not an error here. */
async function makeFile(p: string): Promise<void> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(p, fsc.O_RDONLY | fsc.O_CREAT, 0o644);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EEXIST') throw goPathError(err);
  } finally {
    await handle?.close();
  }
}

/**
 * Go's checkType for a hostPath `type` (v1.20 semantics: `File` accepts anything that exists and is
 * not a directory; `DirectoryOrCreate`/`FileOrCreate` return straight after creating). '' and
 * undefined check nothing.
 */
export async function checkHostPathType(p: string, type: string | undefined, stat: StatFn = defaultStat): Promise<void> {
  const fail = (what: string): Error => new Error(`hostPath type check failed: ${p} is not a ${what}`);
  switch (type ?? '') {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (!(await exists(p, stat))) return makeDir(p);
      if (!(await isType(p, 'Directory', stat))) throw fail('directory');
      return;
    case 'Directory':
      if (!(await exists(p, stat)) || !(await isType(p, 'Directory', stat))) throw fail('directory');
      return;
    case 'FileOrCreate':
      if (!(await exists(p, stat))) return makeFile(p);
      if (await isType(p, 'Directory', stat)) throw fail('file');
      return;
    case 'File':
      if (!(await exists(p, stat)) || (await isType(p, 'Directory', stat))) throw fail('file');
      return;
    case 'Socket':
      if (!(await isType(p, 'Socket', stat))) throw fail('socket file');
      return;
    case 'CharDevice':
      if (!(await isType(p, 'CharDevice', stat))) throw fail('character device');
      return;
    case 'BlockDevice':
      if (!(await isType(p, 'BlockDevice', stat))) throw fail('block device');
      return;
    default:
      throw new Error(`${type} is an invalid volume type`);
  }
}

/** Go's hostPathMounter.SetUp: no `..` in the path, then the type checks. */
export async function setUpHostPath(p: string, type: string | undefined, stat: StatFn = defaultStat): Promise<void> {
  const backsteps = validatePathNoBacksteps(p);
  if (backsteps) throw new Error(`invalid HostPath \`${p}\`: ${backsteps}`);
  await checkHostPathType(p, type, stat);
}

/**
 * Removes a plugin's bookkeeping directory for a volume whose data lives elsewhere. It refuses to
 * remove anything while something is mounted at or below dir, and never follows symlinks, so the
 * host path a volume pointed at is never touched.
 */
export async function removeBookkeepingDir(dir: string, host: VolumeHost): Promise<void> {
  let info;
  try {
    info = await fsp.lstat(dir);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return;
    throw goPathError(err);
  }
  if (!info.isDirectory()) {
    await fsp.unlink(dir).catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== 'ENOENT') throw goPathError(err);
    });
    return;
  }
  const mounted = await host.mounter.mountPointsUnder(dir);
  if (mounted.length > 0) throw new Error(`cannot remove volume directory ${dir}: ${mounted[0]} is still mounted`);
  await fsp.rm(dir, { recursive: true, force: true });
}

export interface HostPathPluginOptions {
  /** For tests: how paths are stat'ed (e.g. to present a block device). */
  stat?: StatFn;
}

export class HostPathPlugin implements VolumePlugin {
  readonly name = HOST_PATH_PLUGIN_NAME;
  readonly requiresRemount = false;
  private readonly stat: StatFn;

  constructor(opts: HostPathPluginOptions = {}) {
    this.stat = opts.stat ?? defaultStat;
  }

  canSupport(volume: V1Volume): boolean {
    return volume.hostPath !== undefined && volume.hostPath !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.hostPath;
    if (!source) throw new Error('spec does not reference an HostPath volume type');
    await setUpHostPath(source.path, source.type, this.stat);
    // Go: hostPath volumes are never SELinux-relabelled (the host's labels stay) and their
    // read-only-ness is per volumeMount.
    return { path: source.path, readOnly: false, selinuxRelabel: false };
  }

  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    await removeBookkeepingDir(dir, host);
  }
}
