// The host's mount table (Go: k8s.io/mount-utils): tmpfs mounts through mount(8) and the mount table
// read from /proc/self/mountinfo.
import { execFile } from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from '@kubelet-ts/core';
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

/**
 * Parses mountinfo text. Malformed lines are skipped rather than failing the whole table: a caller
 * asking whether one path is mounted should not fail on an unrelated odd line.
 */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    if (fields.length < 10 || sep < 0 || fields.length < sep + 3) continue;
    const id = Number(fields[0]);
    const parentId = Number(fields[1]);
    if (!Number.isInteger(id) || !Number.isInteger(parentId)) continue;
    entries.push({
      id,
      parentId,
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
}

const permissionHints = [/permission denied/i, /not permitted/i, /must be superuser/i, /only root/i, /EPERM/];

/** Go's `exit status N`, or the spawn error for a command that did not run. */
function exitText(file: string, err: CommandError): string {
  if (typeof err.code === 'number') return `exit status ${err.code}`;
  if (err.code === 'ENOENT') return `exec: "${file}": executable file not found in $PATH`;
  return err.message;
}

/** Mounts through mount(8)/umount(8) and reads the mount table from mountinfo. */
export class SystemMounter implements Mounter {
  private readonly mountInfoPath: string;
  private readonly mountCommand: string;
  private readonly umountCommand: string;
  private readonly run: CommandRunner;

  constructor(opts: SystemMounterOptions = {}) {
    this.mountInfoPath = opts.mountInfoPath ?? '/proc/self/mountinfo';
    this.mountCommand = opts.mountCommand ?? 'mount';
    this.umountCommand = opts.umountCommand ?? 'umount';
    this.run = opts.run ?? runCommand;
  }

  async mountTmpfs(target: string, options: { sizeBytes?: number } = {}): Promise<void> {
    const args = ['-t', 'tmpfs'];
    // Without size the kernel's default (half of RAM) applies, as Go does for a zero size.
    if (options.sizeBytes !== undefined && options.sizeBytes > 0) args.push('-o', `size=${Math.ceil(options.sizeBytes)}`);
    args.push('tmpfs', target);
    await this.mount(args, `mounting tmpfs at ${target}`);
  }

  /** `mount --no-canonicalize -o bind <source> <target>`, as Go's doBindSubPath mounts a subPath. */
  async bindMount(source: string, target: string): Promise<void> {
    await this.mount(['--no-canonicalize', '-o', 'bind', source, target], `bind-mounting ${source} at ${target}`);
  }

  private async mount(args: string[], what: string): Promise<void> {
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
    const resolved = await resolvePath(target);
    return (await this.entries()).some((e) => e.mountPoint === resolved);
  }

  async mountPointsUnder(prefix: string): Promise<string[]> {
    const given = path.resolve(prefix);
    const resolved = await resolvePath(given);
    const found = new Set<string>();
    for (const e of await this.entries()) {
      if (pathWithinBase(e.mountPoint, resolved)) found.add(e.mountPoint);
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
}
