// The host's mount table (Go: k8s.io/mount-utils): tmpfs and bind mounts through a long-lived mount
// helper (mount(2) without a process per mount) or mount(8), and the mount table read from
// /proc/self/mountinfo.
import { execFile } from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from '@kubelet-ts/core';
import { MS_BIND, MountHelper, MountHelperUnavailableError } from './mount-helper.js';
import type { Mounter } from './types.js';

/** One line of /proc/<pid>/mountinfo (proc(5)), with the octal escapes of the path fields undone. */
export interface MountInfoEntry {
  id: number;
  parentId: number;
  /** `major:minor` of the device. */
  majorMinor: string;
  /** The root of the mount within its filesystem (`/` unless a bind mount of a subdirectory). */
  root: string;
  mountPoint: string;
  /** Per-mount options (rw, nosuid, relatime ...). */
  options: string[];
  /** shared:N, master:N, propagate_from:N, unbindable. */
  optionalFields: string[];
  fsType: string;
  source: string;
  /** Per-superblock options (size=..., mode=...). */
  superOptions: string[];
}

/** The kernel escapes space, tab, newline and backslash in path fields as `\040`, `\011`, `\012`, `\134`. */
export function unescapeMountInfoField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** The space-separated fields of a well-formed mountinfo line, undefined for any other line. */
function entryFields(line: string): string[] | undefined {
  if (line.trim() === '') return undefined;
  const fields = line.split(' ');
  const sep = fields.indexOf('-', 6);
  if (fields.length < 10 || sep < 0 || fields.length < sep + 3) return undefined;
  if (!Number.isInteger(Number(fields[0])) || !Number.isInteger(Number(fields[1]))) return undefined;
  return fields;
}

/**
 * Parses mountinfo text. Malformed lines are skipped rather than failing the whole table: a caller
 * asking whether one path is mounted should not fail on an unrelated odd line.
 */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = entryFields(line);
    if (!fields) continue;
    const sep = fields.indexOf('-', 6);
    entries.push({
      id: Number(fields[0]),
      parentId: Number(fields[1]),
      majorMinor: fields[2],
      root: unescapeMountInfoField(fields[3]),
      mountPoint: unescapeMountInfoField(fields[4]),
      options: fields[5].split(','),
      optionalFields: fields.slice(6, sep),
      fsType: fields[sep + 1],
      source: unescapeMountInfoField(fields[sep + 2]),
      superOptions: (fields[sep + 3] ?? '').split(',').filter((o) => o !== ''),
    });
  }
  return entries;
}

/**
 * The mount points of mountinfo text in table order (the fifth field only, unescaped): what
 * isMountPoint and mountPointsUnder need, without building the whole entry of every line.
 */
export function parseMountPoints(text: string): string[] {
  const points: string[] = [];
  for (const line of text.split('\n')) {
    const fields = entryFields(line);
    if (!fields) continue;
    const mountPoint = fields[4];
    points.push(mountPoint.includes('\\') ? unescapeMountInfoField(mountPoint) : mountPoint);
  }
  return points;
}

/** Go's mount.PathWithinBase: fullPath is base itself or below it (lexically). */
export function pathWithinBase(fullPath: string, basePath: string): boolean {
  const rel = path.relative(basePath, fullPath);
  if (rel === '') return true;
  return rel !== '..' && !rel.startsWith('../') && !path.isAbsolute(rel);
}

function depth(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}

/** Resolves symlinks in p when it exists, since the mount table lists resolved paths. */
async function resolvePath(p: string): Promise<string> {
  const abs = path.resolve(p);
  try {
    return await realpath(abs);
  } catch {
    return abs;
  }
}

/** Runs a command; rejects with an error carrying the exit code, stdout and stderr. */
export type CommandRunner = (file: string, args: string[]) => Promise<{ stdout: string; stderr: string }>;

export interface CommandError extends Error {
  /** The exit status (number) or a spawn error code such as ENOENT (string). */
  code?: number | string;
  stdout?: string;
  stderr?: string;
}

const runCommand: CommandRunner = (file, args) =>
  new Promise((resolve, reject) => {
    execFile(file, args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        reject(Object.assign(err, { stdout, stderr }));
        return;
      }
      resolve({ stdout, stderr });
    });
  });

export interface SystemMounterOptions {
  /** Where the mount table is read from. Default `/proc/self/mountinfo`. */
  mountInfoPath?: string;
  /** Default `mount`. */
  mountCommand?: string;
  /** Default `umount`. */
  umountCommand?: string;
  /** How commands run (tests inject failures). Default: child_process.execFile. */
  run?: CommandRunner;
  /**
   * Makes the mount(2)/umount2(2) calls without a process per mount; `false` runs mount(8) and
   * umount(8) for every call. Default: a MountHelper started on the first mount. Where the helper
   * cannot run (no perl), or a call fails, mount(8)/umount(8) run instead (a failure's message is
   * theirs, as Go's).
   */
  helper?: MountHelper | false;
}

const permissionHints = [/permission denied/i, /not permitted/i, /must be superuser/i, /only root/i, /EPERM/];

/** Go's `exit status N`, or the spawn error for a command that did not run. */
function exitText(file: string, err: CommandError): string {
  if (typeof err.code === 'number') return `exit status ${err.code}`;
  if (err.code === 'ENOENT') return `exec: "${file}": executable file not found in $PATH`;
  return err.message;
}

/**
 * Mounts through the mount helper (else mount(8)/umount(8)) and reads the mount table from
 * mountinfo. Callers asking while a read of the table is under way share the next read, which
 * starts after they asked: every answer reflects the mounts made before the question, with one read
 * for a burst of questions rather than one each.
 */
export class SystemMounter implements Mounter {
  private readonly mountInfoPath: string;
  private readonly mountCommand: string;
  private readonly umountCommand: string;
  private readonly run: CommandRunner;
  private readonly helper: MountHelper | undefined;
  /** The mountinfo read under way, and the one queued after it for those who asked meanwhile. */
  private reading?: Promise<string[]>;
  private queued?: Promise<string[]>;
  /** mountinfo reads so far. */
  tableReads = 0;

  constructor(opts: SystemMounterOptions = {}) {
    this.mountInfoPath = opts.mountInfoPath ?? '/proc/self/mountinfo';
    this.mountCommand = opts.mountCommand ?? 'mount';
    this.umountCommand = opts.umountCommand ?? 'umount';
    this.run = opts.run ?? runCommand;
    this.helper = opts.helper === false ? undefined : (opts.helper ?? new MountHelper());
  }

  /** Ends the mount helper (it would also end with this process). */
  close(): void {
    this.helper?.close();
  }

  async mountTmpfs(target: string, options: { sizeBytes?: number } = {}): Promise<void> {
    const args = ['-t', 'tmpfs'];
    // Without size the kernel's default (half of RAM) applies, as Go does for a zero size.
    const data = options.sizeBytes !== undefined && options.sizeBytes > 0 ? `size=${Math.ceil(options.sizeBytes)}` : undefined;
    if (data) args.push('-o', data);
    args.push('tmpfs', target);
    await this.mount(args, `mounting tmpfs at ${target}`, (h) => h.mount('tmpfs', target, 'tmpfs', 0, data));
  }

  /** `mount --no-canonicalize -o bind <source> <target>`, as Go's doBindSubPath mounts a subPath. */
  async bindMount(source: string, target: string): Promise<void> {
    await this.mount(['--no-canonicalize', '-o', 'bind', source, target], `bind-mounting ${source} at ${target}`, (h) =>
      h.mount(source, target, undefined, MS_BIND, undefined),
    );
  }

  /**
   * Whether the helper made the call. False when it cannot run here or the call failed: mount(8)
   * then runs (a failed call again, so that the error is mount(8)'s, with its exit status and output).
   */
  private async viaHelper(call: (helper: MountHelper) => Promise<{ errno: number }>): Promise<boolean> {
    if (!this.helper) return false;
    try {
      return (await call(this.helper)).errno === 0;
    } catch (err) {
      if (err instanceof MountHelperUnavailableError) return false;
      throw err;
    }
  }

  private async mount(args: string[], what: string, call: (helper: MountHelper) => Promise<{ errno: number }>): Promise<void> {
    try {
      if (await this.viaHelper(call)) return;
    } catch (err) {
      // The helper died with the call outstanding: whether it mounted is not known, so nothing is retried.
      throw new Error(`mount failed: ${(err as Error).message}\nMounting command: ${this.mountCommand}\nMounting arguments: ${args.join(' ')}\nOutput: `, { cause: err });
    }
    try {
      await this.run(this.mountCommand, args);
    } catch (e) {
      const err = e as CommandError;
      const output = `${err.stderr ?? ''}${err.stdout ?? ''}`;
      // Go's mount-utils text, so events read as they do for the Go kubelet.
      const goText =
        `mount failed: ${exitText(this.mountCommand, err)}\nMounting command: ${this.mountCommand}\n` +
        `Mounting arguments: ${args.join(' ')}\nOutput: ${output}`;
      const notPermitted =
        errorCode(err) === 'EPERM' || errorCode(err) === 'EACCES' || permissionHints.some((re) => re.test(output));
      const message = notPermitted
        ? `${what} is not permitted for this user or host (it needs root or CAP_SYS_ADMIN in the mount namespace): ${goText}`
        : goText;
      throw Object.assign(new Error(message, { cause: err }), { code: notPermitted ? 'EPERM' : err.code });
    }
  }

  async unmount(target: string): Promise<void> {
    if (!(await this.isMountPoint(target))) return;
    try {
      if (await this.viaHelper((h) => h.umount(target))) return;
    } catch (err) {
      throw new Error(`unmount failed: ${(err as Error).message}\nUnmounting arguments: ${target}\nOutput: `, { cause: err });
    }
    try {
      await this.run(this.umountCommand, [target]);
    } catch (e) {
      const err = e as CommandError;
      const output = `${err.stderr ?? ''}${err.stdout ?? ''}`;
      // Raced with another unmount: the goal is reached.
      if (/not mounted/i.test(output) && !(await this.isMountPoint(target))) return;
      throw new Error(
        `unmount failed: ${exitText(this.umountCommand, err)}\nUnmounting arguments: ${target}\nOutput: ${output}`,
        { cause: err },
      );
    }
  }

  async isMountPoint(target: string): Promise<boolean> {
    const [resolved, points] = await Promise.all([resolvePath(target), this.mountPoints()]);
    return points.includes(resolved);
  }

  async mountPointsUnder(prefix: string): Promise<string[]> {
    const given = path.resolve(prefix);
    const [resolved, points] = await Promise.all([resolvePath(given), this.mountPoints()]);
    const found = new Set<string>();
    for (const mountPoint of points) {
      if (pathWithinBase(mountPoint, resolved)) found.add(mountPoint);
    }
    // Report paths under the prefix as the caller spelled it, even when it goes through a symlink.
    return [...found]
      .sort((a, b) => depth(b) - depth(a) || (a < b ? 1 : a > b ? -1 : 0))
      .map((m) => (resolved === given ? m : path.join(given, path.relative(resolved, m))));
  }

  /** The parsed mount table. */
  async entries(): Promise<MountInfoEntry[]> {
    return parseMountInfo(await readFile(this.mountInfoPath, 'utf8'));
  }

  /**
   * The mount points, from a read of the table that starts after this call: the one starting now
   * when none is under way, else the one queued after it, shared by all who ask meanwhile.
   */
  private mountPoints(): Promise<string[]> {
    if (this.queued) return this.queued;
    if (!this.reading) return this.readMountPoints();
    const settled = this.reading.then(
      () => undefined,
      () => undefined,
    );
    const queued = settled.then(() => {
      this.queued = undefined;
      return this.readMountPoints();
    });
    this.queued = queued;
    return queued;
  }

  private readMountPoints(): Promise<string[]> {
    this.tableReads++;
    const reading = readFile(this.mountInfoPath, 'utf8').then(parseMountPoints);
    this.reading = reading;
    const done = (): void => {
      if (this.reading === reading) this.reading = undefined;
    };
    reading.then(done, done);
    return reading;
  }
}
