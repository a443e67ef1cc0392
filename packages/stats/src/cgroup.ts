// CPU and memory of a cgroup read straight from the cgroup filesystem, as cAdvisor (through runc's
// libcontainer) reads them, for cgroup v1 and v2. Behind the CgroupReader interface so tests can point
// it at a fake tree in a temp dir.
import { existsSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseMeminfo } from '@kubelet-ts/core';

export type CgroupVersion = 1 | 2;

/** Memory figures of one cgroup; a figure its files do not give is left out. */
export interface CgroupMemory {
  usageBytes?: number;
  /** usage - inactive file cache (never below 0), as cAdvisor computes it. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** The memory limit; undefined when unlimited. */
  limitBytes?: number;
}

export interface CgroupReader {
  version(): Promise<CgroupVersion>;
  /**
   * Cumulative CPU time of the cgroup in nanoseconds. `cgroup` is a path inside the hierarchy,
   * '/' for the root. Rejects with an error naming the file when it cannot be read.
   */
  readCpuUsageNanos(cgroup: string): Promise<number>;
  /** Rejects with an error naming the file when the usage file cannot be read. */
  readMemory(cgroup: string): Promise<CgroupMemory>;
  /** When the cgroup was created (its directory's birth or change time), in ms. */
  creationTimeMs(cgroup: string): Promise<number>;
}

/** Above this a limit means "no limit": kernels round the max (Go: isMemoryUnlimited, 1 << 62). */
const UNLIMITED_MEMORY = 2 ** 62;

/** A cgroup file that could not be read or parsed; the message names the file. */
export class CgroupFileError extends Error {
  readonly code: string | undefined;
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
    super(`read ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'CgroupFileError';
    this.code = typeof code === 'string' ? code : undefined;
  }
}

/**
 * A cgroup file, read synchronously: cgroupfs files are made by the kernel on read and never wait for a disk, and one
 * synchronous read costs a fraction of the promise API's open, fstat, read and close round trips.
 */
async function readText(file: string): Promise<string> {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CgroupFileError(file, err);
  }
}

async function readNumber(file: string): Promise<number> {
  const text = (await readText(file)).trim();
  const value = Number(text);
  if (text === '' || !Number.isFinite(value)) throw new CgroupFileError(file, new Error(`not a number: ${JSON.stringify(text.slice(0, 40))}`));
  return value;
}

/** "key value" lines (memory.stat, cpu.stat) into a map; lines that do not parse are ignored. */
export function parseFlatKeyedFile(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) values.set(key, Number(value));
  }
  return values;
}

const exists = async (path: string): Promise<boolean> => existsSync(path);

/**
 * Reads cgroups under `cgroupRoot` (default /sys/fs/cgroup). The version is v2 when the root has
 * cgroup.controllers (the unified hierarchy); otherwise v1 with one directory per controller (a hybrid
 * host's "unified" directory is ignored, as runc does when the controllers are on v1).
 */
export class FsCgroupReader implements CgroupReader {
  private readonly cgroupRoot: string;
  private readonly procRoot: string;
  private versionPromise: Promise<CgroupVersion> | undefined;
  private cpuControllerDir: string | undefined;

  constructor(opts: { cgroupRoot?: string; procRoot?: string } = {}) {
    this.cgroupRoot = opts.cgroupRoot ?? '/sys/fs/cgroup';
    this.procRoot = opts.procRoot ?? '/proc';
  }

  version(): Promise<CgroupVersion> {
    this.versionPromise ??= exists(join(this.cgroupRoot, 'cgroup.controllers')).then((v2) => (v2 ? 2 : 1));
    return this.versionPromise;
  }

  async readCpuUsageNanos(cgroup: string): Promise<number> {
    if ((await this.version()) === 2) {
      const file = join(this.cgroupRoot, cgroup, 'cpu.stat');
      const usageUsec = parseFlatKeyedFile(await readText(file)).get('usage_usec');
      if (usageUsec === undefined) throw new CgroupFileError(file, new Error('no usage_usec'));
      return usageUsec * 1000;
    }
    return readNumber(join(await this.v1CpuDir(), cgroup, 'cpuacct.usage'));
  }

  async readMemory(cgroup: string): Promise<CgroupMemory> {
    return (await this.version()) === 2 ? this.readMemoryV2(cgroup) : this.readMemoryV1(cgroup);
  }

  async creationTimeMs(cgroup: string): Promise<number> {
    const dir = (await this.version()) === 2 ? join(this.cgroupRoot, cgroup) : join(this.cgroupRoot, 'memory', cgroup);
    try {
      const st = await stat(dir);
      return st.birthtimeMs > 0 ? st.birthtimeMs : st.ctimeMs;
    } catch (err) {
      throw new CgroupFileError(dir, err);
    }
  }

  private async readMemoryV1(cgroup: string): Promise<CgroupMemory> {
    const dir = join(this.cgroupRoot, 'memory', cgroup);
    const usageBytes = await readNumber(join(dir, 'memory.usage_in_bytes'));
    const result: CgroupMemory = { usageBytes, workingSetBytes: usageBytes };
    const stats = await readText(join(dir, 'memory.stat')).then(parseFlatKeyedFile, () => undefined);
    if (stats) {
      // cAdvisor: hierarchical (total_*) figures for the working set and RSS, the cgroup's own for page faults.
      const inactiveFile = stats.get('total_inactive_file');
      if (inactiveFile !== undefined) result.workingSetBytes = Math.max(0, usageBytes - inactiveFile);
      result.rssBytes = stats.get('total_rss');
      result.pageFaults = stats.get('pgfault');
      result.majorPageFaults = stats.get('pgmajfault');
    }
    const limit = await readNumber(join(dir, 'memory.limit_in_bytes')).catch(() => undefined);
    if (limit !== undefined && limit <= UNLIMITED_MEMORY) result.limitBytes = limit;
    return result;
  }

  private async readMemoryV2(cgroup: string): Promise<CgroupMemory> {
    const dir = join(this.cgroupRoot, cgroup);
    const stats = await readText(join(dir, 'memory.stat')).then(parseFlatKeyedFile, () => undefined);
    const usageBytes = await readNumber(join(dir, 'memory.current')).catch((err: unknown) => {
      // The v2 root has no memory.current: runc emulates it from /proc/meminfo (MemTotal - MemFree).
      if (isRoot(cgroup) && err instanceof CgroupFileError && err.code === 'ENOENT') return this.rootUsageFromMeminfo();
      throw err;
    });
    const result: CgroupMemory = { usageBytes, workingSetBytes: usageBytes };
    if (stats) {
      const inactiveFile = stats.get('inactive_file');
      if (inactiveFile !== undefined) result.workingSetBytes = Math.max(0, usageBytes - inactiveFile);
      result.rssBytes = stats.get('anon');
      result.pageFaults = stats.get('pgfault');
      result.majorPageFaults = stats.get('pgmajfault');
    }
    const max = await readText(join(dir, 'memory.max')).catch(() => undefined);
    if (max !== undefined && max.trim() !== 'max' && Number.isFinite(Number(max.trim()))) {
      const limit = Number(max.trim());
      if (limit <= UNLIMITED_MEMORY) result.limitBytes = limit;
    }
    return result;
  }

  private async rootUsageFromMeminfo(): Promise<number> {
    const file = join(this.procRoot, 'meminfo');
    const meminfo = parseMeminfo(await readText(file));
    const total = meminfo.get('MemTotal');
    const free = meminfo.get('MemFree');
    if (total === undefined || free === undefined) throw new CgroupFileError(file, new Error('no MemTotal or MemFree'));
    return total - free;
  }

  /** cpuacct is mounted alone or co-mounted with cpu, under either name order; remembered once found. */
  private async v1CpuDir(): Promise<string> {
    if (this.cpuControllerDir) return this.cpuControllerDir;
    for (const name of ['cpuacct', 'cpu,cpuacct', 'cpuacct,cpu']) {
      const dir = join(this.cgroupRoot, name);
      if (await exists(join(dir, 'cpuacct.usage'))) {
        this.cpuControllerDir = dir;
        return dir;
      }
    }
    return join(this.cgroupRoot, 'cpuacct');
  }
}

const isRoot = (cgroup: string): boolean => cgroup === '' || /^\/*$/.test(cgroup);
