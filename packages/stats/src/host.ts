// Host figures the Go kubelet gets from cAdvisor and small helpers: statfs of a filesystem, disk usage
// of a directory (du), boot time, task limits and counts, and network interfaces from /proc.
import { readFileSync } from 'node:fs';
import { lstat, opendir, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { InterfaceStats } from './api.js';

/** The filesystem holding a path (cAdvisor's FsInfo): bytes and inodes. */
export interface FsInfo {
  /** When it was taken, ms since the epoch. */
  timeMs: number;
  capacityBytes: number;
  /** Free for unprivileged users (statfs f_bavail), as df shows. */
  availableBytes: number;
  /** capacity - free (f_blocks - f_bfree). */
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  /** The filesystem type magic (statfs f_type). */
  type: number;
}

export const TMPFS_MAGIC = 0x01021994;

/** statfs(2) as node returns it (the fields used here). */
export interface StatfsResult {
  type: number;
  bsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
}

export type StatfsFunction = (path: string) => Promise<StatfsResult>;

export const defaultStatfs: StatfsFunction = (path) => statfs(path);

export async function fsInfo(path: string, nowMs: number, statfsFn: StatfsFunction = defaultStatfs): Promise<FsInfo> {
  let st: StatfsResult;
  try {
    st = await statfsFn(path);
  } catch (err) {
    throw new Error(`statfs ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const bsize = Number(st.bsize);
  return {
    timeMs: nowMs,
    capacityBytes: Number(st.blocks) * bsize,
    availableBytes: Number(st.bavail) * bsize,
    usedBytes: (Number(st.blocks) - Number(st.bfree)) * bsize,
    inodes: Number(st.files),
    inodesFree: Number(st.ffree),
    type: Number(st.type),
  };
}

export interface DiskUsage {
  /** Bytes allocated on disk (st_blocks * 512), each inode counted once, as `du -s -x -B 1`. */
  bytes: number;
  /** Inodes under the path, the path itself included, as `find path -xdev | wc -l`. */
  inodes: number;
}

/**
 * Disk usage of a directory tree (Go: volume.MetricsDu, fs.DiskUsage + fs.Find). Stays on the path's
 * filesystem and counts hard links once. Entries that vanish during the walk are skipped; the path
 * itself missing rejects with an error naming it.
 */
export async function diskUsage(path: string): Promise<DiskUsage> {
  // The directory's own lstat and its listing are independent reads: both at once (a file answers ENOTDIR to the listing).
  const [rootResult, listing] = await Promise.allSettled([lstat(path), readdir(path)]);
  if (rootResult.status === 'rejected') {
    const err: unknown = rootResult.reason;
    throw new Error(`du ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const root = rootResult.value;
  const seen = new Set<string>();
  const usage: DiskUsage = { bytes: 0, inodes: 0 };
  const count = (st: { dev: number; ino: number; blocks: number }): void => {
    usage.inodes++;
    const key = `${st.dev}:${st.ino}`;
    if (seen.has(key)) return;
    seen.add(key);
    usage.bytes += st.blocks * 512;
  };
  count(root);
  if (!root.isDirectory()) return usage;
  // A level at a time, its entries' lstats at once; a directory removed or unreadable meanwhile is skipped, as du goes on.
  let level: { dir: string; entries: string[] }[] = listing.status === 'fulfilled' ? [{ dir: path, entries: listing.value }] : [];
  while (level.length > 0) {
    const subdirs: string[] = [];
    for (const { dir, entries } of level) {
      const stats = await Promise.all(entries.map((name) => lstat(join(dir, name)).catch(() => undefined)));
      stats.forEach((st, i) => {
        if (!st || st.dev !== root.dev) return; // vanished, or -x: another filesystem mounted here
        count(st);
        if (st.isDirectory()) subdirs.push(join(dir, entries[i]));
      });
    }
    level = await Promise.all(subdirs.map(async (dir) => ({ dir, entries: await readdir(dir).catch(() => [] as string[]) })));
  }
  return usage;
}

/**
 * A /proc file, read synchronously: procfs files are made by the kernel on read and never wait for a disk, and one
 * synchronous read costs a fraction of the promise API's open, fstat, read and close round trips.
 */
async function readProcFile(procRoot: string, name: string): Promise<string> {
  const file = join(procRoot, name);
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`read ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** When the system booted, in ms (the btime line of /proc/stat, whole seconds as Go's GetBootTime). */
export async function readBootTimeMs(procRoot: string): Promise<number> {
  const text = await readProcFile(procRoot, 'stat');
  const match = /^btime\s+(\d+)/m.exec(text);
  if (!match) throw new Error(`read ${join(procRoot, 'stat')}: no btime line`);
  return Number(match[1]) * 1000;
}

export interface TaskLimits {
  maxpid?: number;
  curproc?: number;
}

/**
 * Task limit and count (Go: pidlimit.Stats): the smaller of kernel.pid_max and kernel.threads-max, and
 * the tasks in existence from /proc/loadavg's "running/total" field, else the count of /proc/<pid>.
 */
export async function readTaskLimits(procRoot: string): Promise<TaskLimits> {
  const result: TaskLimits = {};
  for (const name of ['sys/kernel/pid_max', 'sys/kernel/threads-max']) {
    const limit = Number((await readProcFile(procRoot, name).catch(() => '')).trim());
    if (Number.isInteger(limit) && limit > 0 && (result.maxpid === undefined || limit < result.maxpid)) result.maxpid = limit;
  }
  const loadavg = await readProcFile(procRoot, 'loadavg').catch(() => '');
  const total = loadavg.trim().split(/\s+/)[3]?.split('/')[1];
  if (total !== undefined && /^\d+$/.test(total)) {
    result.curproc = Number(total);
  } else {
    try {
      let pids = 0;
      for await (const entry of await opendir(procRoot)) if (entry.isDirectory() && /^\d+$/.test(entry.name)) pids++;
      result.curproc = pids;
    } catch {
      // no count: leave curproc out
    }
  }
  return result;
}

/**
 * cAdvisor leaves these out of a container's network stats: loopback, and the host ends of container
 * links and bridges (its ignoredDevicePrefixes).
 */
const IGNORED_INTERFACE_PREFIXES = ['lo', 'veth', 'docker', 'nerdctl'];

/** Interfaces of /proc/net/dev (bytes and errors), without the ones cAdvisor ignores. */
export function parseNetDev(text: string): InterfaceStats[] {
  const interfaces: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    if (IGNORED_INTERFACE_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    const fields = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (fields.length < 16 || fields.some((f) => !Number.isFinite(f))) continue;
    // receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs ...
    interfaces.push({ name, rxBytes: fields[0], rxErrors: fields[2], txBytes: fields[8], txErrors: fields[10] });
  }
  return interfaces;
}

/** The interface of the default IPv4 route (destination 00000000 in /proc/net/route), if any. */
export function parseDefaultRouteInterface(text: string): string | undefined {
  for (const line of text.split('\n').slice(1)) {
    const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
    if (iface && destination === '00000000' && (mask === undefined || mask === '00000000')) return iface;
  }
  return undefined;
}

export interface HostNetwork {
  /** The default interface's name (the default route's, else eth0 as Go assumes, else the first). */
  defaultInterface?: string;
  interfaces: InterfaceStats[];
}

export async function readHostNetwork(procRoot: string): Promise<HostNetwork> {
  const interfaces = parseNetDev(await readProcFile(procRoot, 'net/dev'));
  const routed = parseDefaultRouteInterface(await readProcFile(procRoot, 'net/route').catch(() => ''));
  const names = interfaces.map((i) => i.name);
  const defaultInterface = [routed, 'eth0', names[0]].find((name) => name !== undefined && names.includes(name));
  return { defaultInterface, interfaces };
}
