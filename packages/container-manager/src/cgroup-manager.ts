// Go: pkg/kubelet/cm/cgroup_manager_linux.go (cgroupManagerImpl) for the cgroupfs driver, with the file
// writes of libcontainer's fs (v1) and fs2 (v2) cgroup managers that it delegates to.
import { join } from 'node:path';
import { CPU_MAX_SHARES, CPU_MIN_SHARES, isNotExist, defaultLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { nodeCgroupFs } from './cgroup-fs.js';
import { cgroupfsName, formatCgroupName, parseCgroupfsToCgroupName } from './cgroup-names.js';
import type { CgroupFs, CgroupManager, CgroupName, CgroupVersion, MemoryEvents, PressureStats, PsiData, PsiStats, ResourceConfig } from './types.js';

export type { MemoryEvents, PressureStats, PsiData, PsiStats } from './types.js';

export const DEFAULT_CGROUP_MOUNT_ROOT = '/sys/fs/cgroup';

/**
 * Where systemd's "hybrid" layout mounts a cgroup2 hierarchy beside the v1 ones (runc: hybridMountpoint,
 * IsCgroup2HybridMode). It has no controllers; runc (1.0+) makes every container's cgroup there too.
 */
const HYBRID_UNIFIED_DIR = 'unified';

/** The v1 hierarchies libcontainer creates a cgroup in (name=systemd is mounted as `systemd`). */
export const V1_SUBSYSTEMS = [
  'cpuset',
  'devices',
  'memory',
  'cpu',
  'cpuacct',
  'pids',
  'blkio',
  'hugetlb',
  'net_cls',
  'net_prio',
  'perf_event',
  'freezer',
  'rdma',
  'systemd',
] as const;

// Go: the whitelisted controllers Exists checks on v1 (hugetlb with the HugePages gate, on by default).
const V1_EXISTS_SUBSYSTEMS = ['cpu', 'cpuacct', 'cpuset', 'memory', 'systemd', 'pids', 'hugetlb'];
// Go: getSupportedSubsystems: memory, cpu and pids must be mounted; hugetlb is optional.
const V1_REQUIRED_SUBSYSTEMS = ['memory', 'cpu', 'pids'];
// Go: getSupportedUnifiedControllers (before intersecting with the root's controllers).
const V2_SUPPORTED_CONTROLLERS = ['cpu', 'cpuset', 'memory', 'hugetlb', 'pids'];
// Files of a cgroup directory that are never child cgroups.
const CONTROL_FILE = /^(cgroup|cpu|cpuacct|cpuset|memory|pids|hugetlb|blkio|io|devices|freezer|net_cls|net_prio|perf_event|rdma|misc)\.|^(tasks|notify_on_release|release_agent)$/;

/** libcontainer's cgroup v1 -> v2 conversion of cpu.shares to cpu.weight: 1 + ((shares-2)*9999)/262142, 10000 from 262144 on. */
export function cpuSharesToWeight(shares: number): number {
  if (shares >= CPU_MAX_SHARES) return 10000;
  const clamped = Math.max(shares, CPU_MIN_SHARES);
  return 1 + Math.floor(((clamped - 2) * 9999) / 262142);
}

/** The cgroup version of a mount root: v2 when `<mountRoot>/cgroup.controllers` exists (the unified hierarchy). */
export async function detectCgroupVersion(fs: CgroupFs = nodeCgroupFs, mountRoot = DEFAULT_CGROUP_MOUNT_ROOT): Promise<CgroupVersion> {
  return (await fs.exists(join(mountRoot, 'cgroup.controllers'))) ? 'v2' : 'v1';
}

export interface CgroupfsManagerOptions {
  version: CgroupVersion;
  /** Where the hierarchies are mounted. Default /sys/fs/cgroup. */
  mountRoot?: string;
  fs?: CgroupFs;
  logger?: Logger;
  /** Paces the retries of destroy (libcontainer RemovePaths: 5 tries, 10 ms doubling). */
  clock?: Clock;
}

/** A flat-keyed cgroup file ("key value" lines) as numbers; a malformed line is an error naming the file. */
function parseFlatKeyed(text: string, file: string): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^(\S+) (\d+)$/.exec(line.trim());
    if (!m) throw new Error(`unable to parse ${JSON.stringify(line)} in ${JSON.stringify(file)}: want "<key> <value>"`);
    fields[m[1]] = Number(m[2]);
  }
  return fields;
}

/** Parses v2 memory.events (`low N`, `high N`, `max N`, `oom N`, `oom_kill N`, `oom_group_kill N`; unknown keys ignored). */
export function parseMemoryEvents(text: string, file = 'memory.events'): MemoryEvents {
  const f = parseFlatKeyed(text, file);
  if (f.oom_kill === undefined) throw new Error(`no oom_kill in ${JSON.stringify(file)}: ${JSON.stringify(text)}`);
  const events: MemoryEvents = { oomKill: f.oom_kill };
  if (f.low !== undefined) events.low = f.low;
  if (f.high !== undefined) events.high = f.high;
  if (f.max !== undefined) events.max = f.max;
  if (f.oom !== undefined) events.oom = f.oom;
  if (f.oom_group_kill !== undefined) events.oomGroupKill = f.oom_group_kill;
  return events;
}

/** Parses a PSI file: `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and optionally the same for `full`. */
export function parsePsi(text: string, file = 'pressure'): PsiStats {
  const lines: Partial<Record<'some' | 'full', PsiData>> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^(some|full) avg10=(\d+\.\d+) avg60=(\d+\.\d+) avg300=(\d+\.\d+) total=(\d+)$/.exec(line.trim());
    if (!m) throw new Error(`unable to parse ${JSON.stringify(line)} in ${JSON.stringify(file)}: want "some|full avg10=<f> avg60=<f> avg300=<f> total=<n>"`);
    lines[m[1] as 'some' | 'full'] = { avg10: Number(m[2]), avg60: Number(m[3]), avg300: Number(m[4]), total: Number(m[5]) };
  }
  if (!lines.some) throw new Error(`no "some" line in ${JSON.stringify(file)}: ${JSON.stringify(text)}`);
  return lines.full ? { some: lines.some, full: lines.full } : { some: lines.some };
}

/** The cgroup's directory below a hierarchy's mount (the mount itself for the root). */
function cgroupDir(mount: string, name: CgroupName): string {
  return name.length === 0 ? mount : join(mount, ...name);
}

/** The cgroup itself, or its child directory `child` (a single path component: no "/", not "." or ".."). */
function withChild(name: CgroupName, child: string | undefined): CgroupName {
  if (child === undefined) return name;
  if (child === '' || child === '.' || child === '..' || child.includes('/')) {
    throw new Error(`invalid child cgroup ${JSON.stringify(child)} of ${formatCgroupName(name)}: want one directory name`);
  }
  return [...name, child];
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function hasCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

/** The cgroupfs driver's CgroupManager for cgroup v1 and v2. */
export class CgroupfsManager implements CgroupManager {
  readonly version: CgroupVersion;
  readonly mountRoot: string;
  private readonly fs: CgroupFs;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private mounts?: Promise<Map<string, string>>;
  private hybridMount?: Promise<string | undefined>;

  constructor(opts: CgroupfsManagerOptions) {
    this.version = opts.version;
    this.mountRoot = opts.mountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT;
    this.fs = opts.fs ?? nodeCgroupFs;
    this.logger = opts.logger ?? defaultLogger;
    this.clock = opts.clock ?? realClock;
  }

  name(name: CgroupName): string {
    return cgroupfsName(name);
  }

  /** Go: CgroupName for the cgroupfs driver (ParseCgroupfsToCgroupName). */
  cgroupName(literal: string): CgroupName {
    return parseCgroupfsToCgroupName(literal);
  }

  /** v1: subsystem -> the directory its hierarchy is mounted on (a co-mounted `cpu,cpuacct` serves both). */
  subsystemMounts(): Promise<Map<string, string>> {
    this.mounts ??= this.discoverMounts().catch((err: unknown) => {
      this.mounts = undefined;
      throw err;
    });
    return this.mounts;
  }

  private async discoverMounts(): Promise<Map<string, string>> {
    const entries = await this.fs.readdir(this.mountRoot);
    const mounts = new Map<string, string>();
    for (const subsystem of V1_SUBSYSTEMS) {
      const entry = entries.includes(subsystem) ? subsystem : entries.find((e) => e.split(',').includes(subsystem));
      if (entry !== undefined) mounts.set(subsystem, join(this.mountRoot, entry));
    }
    return mounts;
  }

  /**
   * v1 on a hybrid host: the cgroup2 hierarchy mounted at `<mountRoot>/unified` (a directory there with
   * cgroup.controllers, as runc's IsCgroup2HybridMode checks its filesystem type); undefined when there is none,
   * and always on v2.
   */
  hybridUnifiedMount(): Promise<string | undefined> {
    if (this.version === 'v2') return Promise.resolve(undefined);
    this.hybridMount ??= this.discoverHybridMount().catch((err: unknown) => {
      this.hybridMount = undefined;
      throw err;
    });
    return this.hybridMount;
  }

  private async discoverHybridMount(): Promise<string | undefined> {
    const mount = join(this.mountRoot, HYBRID_UNIFIED_DIR);
    return (await this.fs.exists(join(mount, 'cgroup.controllers'))) ? mount : undefined;
  }

  /** The cgroup's directory in the unified hierarchy of a hybrid host; undefined when the host is not hybrid. */
  private async hybridPath(name: CgroupName): Promise<string | undefined> {
    const mount = await this.hybridUnifiedMount();
    return mount === undefined ? undefined : cgroupDir(mount, name);
  }

  /** Go: buildCgroupPaths (v1): the cgroup's directory in every mounted hierarchy. */
  async paths(name: CgroupName): Promise<Map<string, string>> {
    if (this.version === 'v2') return new Map([['', this.unifiedPath(name)]]);
    const result = new Map<string, string>();
    for (const [subsystem, mount] of await this.subsystemMounts()) result.set(subsystem, cgroupDir(mount, name));
    return result;
  }

  private unifiedPath(name: CgroupName): string {
    return cgroupDir(this.mountRoot, name);
  }

  async exists(name: CgroupName): Promise<boolean> {
    if (this.version === 'v2') {
      const needed = await this.supportedUnifiedControllers();
      let enabled: string[];
      try {
        enabled = (await this.fs.readFile(join(this.unifiedPath(name), 'cgroup.controllers'))).split(/\s+/);
      } catch {
        return false;
      }
      const missing = needed.filter((c) => !enabled.includes(c));
      if (missing.length > 0) this.logger.v(4).info('The Cgroup has some missing controllers', { cgroupName: formatCgroupName(name), missing });
      return missing.length === 0;
    }
    const missing: string[] = [];
    for (const [subsystem, path] of await this.paths(name)) {
      if (V1_EXISTS_SUBSYSTEMS.includes(subsystem) && !(await this.fs.exists(path))) missing.push(subsystem);
    }
    if (missing.length > 0) this.logger.v(4).info('The Cgroup has some missing paths', { cgroupName: formatCgroupName(name), missing });
    return missing.length === 0;
  }

  async create(name: CgroupName, resources: ResourceConfig = {}): Promise<void> {
    if (this.version === 'v2') {
      await this.createUnified(name);
    } else {
      for (const [subsystem, mount] of await this.subsystemMounts()) await this.mkdirAll(mount, name, subsystem === 'cpuset');
    }
    // Go: Create calls Update after Apply and only logs its failure ("it's needed to ensure cpu quota is set properly").
    try {
      await this.update(name, resources);
    } catch (err) {
      this.logger.error('cgroup update failed', err, { cgroupName: formatCgroupName(name) });
    }
  }

  /** mkdir -p below a hierarchy's mount; in cpuset, an empty cpuset.cpus/cpuset.mems is copied from the parent on the way down (libcontainer ensureParent). */
  private async mkdirAll(mount: string, name: CgroupName, cpuset: boolean): Promise<void> {
    let current = mount;
    for (const part of name) {
      const parent = current;
      current = join(current, part);
      try {
        await this.fs.mkdir(current);
      } catch (err) {
        if (!hasCode(err, 'EEXIST')) throw err;
      }
      if (cpuset) await this.copyCpusetIfEmpty(parent, current);
    }
  }

  private async copyCpusetIfEmpty(parent: string, current: string): Promise<void> {
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      const own = (await this.fs.readFile(join(current, file))).trim();
      if (own !== '') continue;
      const inherited = (await this.fs.readFile(join(parent, file))).trim();
      if (inherited !== '') await this.write(current, file, inherited);
    }
  }

  /** runc fs2 CreateCgroupPath: a failed create removes the directories it made. */
  private async createUnified(name: CgroupName): Promise<void> {
    const created: string[] = [];
    try {
      await this.ensureUnifiedPath(name, created);
    } catch (err) {
      for (const dir of created.reverse()) await this.fs.rmdir(dir).catch(() => undefined);
      throw err;
    }
  }

  /**
   * runc CreateCgroupPath / Go propagateControllers: from the root down, each level is made (when missing) and,
   * unless it is the cgroup itself, gets the supported controllers in its cgroup.subtree_control.
   */
  private async ensureUnifiedPath(name: CgroupName, created: string[] = []): Promise<void> {
    const controllers = await this.supportedUnifiedControllers();
    let current = this.mountRoot;
    for (let i = 0; i <= name.length; i++) {
      if (i > 0) {
        current = join(current, name[i - 1]);
        try {
          await this.fs.mkdir(current);
          created.push(current);
        } catch (err) {
          if (!hasCode(err, 'EEXIST')) throw new Error(`failed to create cgroup ${JSON.stringify(cgroupfsName(name))} : ${errorMessage(err)}`, { cause: err });
        }
      }
      if (i < name.length) await this.enableControllers(current, controllers);
    }
  }

  private async supportedUnifiedControllers(): Promise<string[]> {
    let available: string[];
    try {
      available = (await this.fs.readFile(join(this.mountRoot, 'cgroup.controllers'))).split(/\s+/);
    } catch (err) {
      throw new Error(`failed to read controllers from ${JSON.stringify(this.mountRoot)} : ${errorMessage(err)}`, { cause: err });
    }
    return V2_SUPPORTED_CONTROLLERS.filter((c) => available.includes(c));
  }

  /**
   * `+cpu +memory ...` in a cgroup's cgroup.subtree_control. The kernel applies such a write all or nothing, so when
   * it fails the controllers are tried one at a time (runc CreateCgroupPath); the first one the kernel still refuses
   * fails the create, with the file, the controller and why: ENOENT when the cgroup does not have the controller
   * (its parent does not enable it), EBUSY when the cgroup has processes of its own (no internal processes).
   */
  private async enableControllers(dir: string, controllers: string[]): Promise<void> {
    const file = join(dir, 'cgroup.subtree_control');
    let enabled: string[] = [];
    try {
      enabled = (await this.fs.readFile(file)).split(/\s+/).filter(Boolean);
    } catch {
      // Written below: its error names the file.
    }
    const missing = controllers.filter((c) => !enabled.includes(c));
    if (missing.length === 0) return;
    try {
      await this.fs.writeFile(file, missing.map((c) => `+${c}`).join(' '));
      return;
    } catch (err) {
      this.logger.v(4).info('Enabling the controllers all at once failed, trying one at a time', { path: file, err: errorMessage(err) });
    }
    for (const controller of missing) {
      try {
        await this.fs.writeFile(file, `+${controller}`);
      } catch (err) {
        const why = await this.whyNotEnabled(dir, controller, err);
        throw Object.assign(
          new Error(`failed to enable controllers on ${JSON.stringify(dir)}: write "+${controller}" to ${JSON.stringify(file)}: ${errorMessage(err)}${why}`, { cause: err }),
          { code: (err as { code?: unknown }).code },
        );
      }
    }
  }

  /** The kernel's reason for refusing "+controller" in a cgroup's subtree_control, read from the cgroup. */
  private async whyNotEnabled(dir: string, controller: string, err: unknown): Promise<string> {
    try {
      if (hasCode(err, 'ENOENT')) {
        const have = (await this.fs.readFile(join(dir, 'cgroup.controllers'))).trim();
        return ` (the cgroup's cgroup.controllers is ${JSON.stringify(have)}: its parent does not enable ${controller})`;
      }
      if (hasCode(err, 'EBUSY')) {
        const procs = (await this.fs.readFile(join(dir, 'cgroup.procs'))).split('\n').filter(Boolean);
        if (procs.length > 0) {
          return ` (the cgroup has processes of its own: ${procs.slice(0, 5).join(' ')}${procs.length > 5 ? ' ...' : ''}; cgroup v2 allows no processes in a cgroup that enables controllers for its children)`;
        }
      }
    } catch {
      // The reason is a courtesy: the error itself names the file.
    }
    return '';
  }

  private async write(dir: string, file: string, data: string): Promise<void> {
    const path = join(dir, file);
    try {
      await this.fs.writeFile(path, data);
    } catch (err) {
      throw Object.assign(new Error(`failed to write ${JSON.stringify(data)} to ${JSON.stringify(path)}: ${errorMessage(err)}`, { cause: err }), {
        code: (err as { code?: unknown }).code,
      });
    }
  }

  async update(name: CgroupName, resources: ResourceConfig): Promise<void> {
    if (this.version === 'v2') {
      try {
        await this.ensureUnifiedPath(name);
        await this.setUnified(this.unifiedPath(name), resources);
      } catch (err) {
        throw new Error(`failed to set resources for cgroup ${formatCgroupName(name)}: ${errorMessage(err)}`, { cause: err });
      }
      return;
    }
    const paths = await this.paths(name);
    for (const subsystem of [...V1_REQUIRED_SUBSYSTEMS, 'hugetlb']) {
      const path = paths.get(subsystem);
      if (path === undefined) {
        if (V1_REQUIRED_SUBSYSTEMS.includes(subsystem)) throw new Error(`failed to find subsystem mount for required subsystem: ${subsystem}`);
        continue;
      }
      try {
        await this.setV1(subsystem, path, resources);
      } catch (err) {
        throw new Error(`failed to set config for supported subsystems : ${errorMessage(err)}`, { cause: err });
      }
    }
  }

  /** libcontainer fs: MemoryGroup.Set, CpuGroup.Set, PidsGroup.Set. */
  private async setV1(subsystem: string, path: string, r: ResourceConfig): Promise<void> {
    if (subsystem === 'memory' && r.memoryLimitBytes) {
      await this.write(path, 'memory.limit_in_bytes', String(r.memoryLimitBytes));
    } else if (subsystem === 'cpu') {
      if (r.cpuShares) {
        await this.write(path, 'cpu.shares', String(r.cpuShares));
        const read = Number.parseInt((await this.fs.readFile(join(path, 'cpu.shares'))).trim(), 10);
        if (r.cpuShares > read) throw new Error(`the maximum allowed cpu-shares is ${read}`);
        if (r.cpuShares < read) throw new Error(`the minimum allowed cpu-shares is ${read}`);
      }
      if (r.cpuPeriod) await this.write(path, 'cpu.cfs_period_us', String(r.cpuPeriod));
      if (r.cpuQuota) await this.write(path, 'cpu.cfs_quota_us', String(r.cpuQuota));
    } else if (subsystem === 'pids' && r.pidsLimit) {
      await this.write(path, 'pids.max', r.pidsLimit > 0 ? String(r.pidsLimit) : 'max');
    }
  }

  /**
   * libcontainer fs2 Set, in its order: setPids (pids.max), setMemory (memory.max), setCpu (cpu.weight, cpu.max).
   * The order shows when a controller is missing: the first file absent is the one the error names.
   */
  private async setUnified(path: string, r: ResourceConfig): Promise<void> {
    if (r.pidsLimit) await this.write(path, 'pids.max', r.pidsLimit > 0 ? String(r.pidsLimit) : 'max');
    if (r.memoryLimitBytes) await this.write(path, 'memory.max', r.memoryLimitBytes === -1 ? 'max' : String(r.memoryLimitBytes));
    if (r.cpuShares) await this.write(path, 'cpu.weight', String(cpuSharesToWeight(r.cpuShares)));
    if (r.cpuQuota || r.cpuPeriod) {
      let max = r.cpuQuota !== undefined && r.cpuQuota > 0 ? String(r.cpuQuota) : 'max';
      if (r.cpuPeriod) max += ` ${r.cpuPeriod}`;
      await this.write(path, 'cpu.max', max);
    }
  }

  /**
   * The names of the child cgroups of a cgroup, in any hierarchy (Go scans every mount in GetAllPodsFromCgroups).
   * On a hybrid host the unified hierarchy counts too, so that a pod cgroup left only there (by runc, or by a
   * kubelet before destroy removed it there) is found as an orphan and destroyed; Go's v1 mounts leave it out.
   */
  async listChildren(name: CgroupName): Promise<string[]> {
    const children = new Set<string>();
    const paths = [...(await this.paths(name)).values()];
    const hybrid = await this.hybridPath(name);
    if (hybrid !== undefined) paths.push(hybrid);
    for (const path of paths) {
      for (const child of await this.cgroupChildren(path)) children.add(child);
    }
    return [...children].sort();
  }

  private async cgroupChildren(path: string): Promise<string[]> {
    let entries: string[];
    try {
      entries = await this.fs.readdir(path);
    } catch (err) {
      if (isNotExist(err)) return [];
      throw new Error(`failed to read the cgroup directory ${path} : ${errorMessage(err)}`, { cause: err });
    }
    const children: string[] = [];
    for (const entry of entries) {
      if (!CONTROL_FILE.test(entry) && (await this.fs.exists(join(path, entry, 'cgroup.procs')))) children.push(entry);
    }
    return children;
  }

  /** Children first, then the cgroup itself; a cgroup already gone counts as removed. */
  private async removeAll(path: string): Promise<void> {
    for (const child of await this.cgroupChildren(path)) await this.removeAll(join(path, child));
    try {
      await this.fs.rmdir(path);
    } catch (err) {
      if (!isNotExist(err)) throw err;
    }
  }

  /**
   * libcontainer RemovePaths: up to 5 passes over the paths, 10 ms then doubling between them. On v2 a pass skips
   * the rmdir while cgroup.events says `populated 1` (the kernel would refuse it with EBUSY).
   *
   * v1 on a hybrid host: the cgroup's directory in the unified hierarchy is removed too (children first, in the same
   * passes; runc keys it "", which here is the v2 path's key). runc makes it for every container (mkdir -p of the pod's directory and its
   * parents) and removes only its container's leaf, so without this every deleted pod leaves a `pod<uid>` cgroup
   * there for good. Go v1.20 leaks it (buildCgroupPaths lists the v1 mounts only, and its runc 1.0.0-rc92 has no
   * hybrid path); newer Go removes it through runc's fs manager, whose paths include "" on a hybrid host. Unlike
   * runc, a failure there is logged and never fails the destroy of the v1 cgroup: the v1 hierarchies hold the
   * processes and limits, and housekeeping (listChildren) finds a pod left only in the unified hierarchy again.
   */
  async destroy(name: CgroupName): Promise<void> {
    const remaining = await this.paths(name);
    // The unified hierarchy's root (name []) is a mount and holds the rest of the system's cgroups: never removed.
    const hybrid = name.length > 0 ? await this.hybridPath(name) : undefined;
    if (hybrid !== undefined) remaining.set(HYBRID_UNIFIED_DIR, hybrid);
    let delay = 10;
    let lastError: unknown;
    let unifiedError: unknown;
    for (let attempt = 0; attempt < 5 && remaining.size > 0; attempt++) {
      if (attempt > 0) {
        await this.clock.sleep(delay);
        delay *= 2;
      }
      for (const [subsystem, path] of [...remaining]) {
        try {
          if (this.version === 'v2' && (await this.populated(path))) {
            lastError = new Error(`${JSON.stringify(join(path, 'cgroup.events'))} says populated 1: processes are still in the cgroup or below it`);
            continue;
          }
          await this.removeAll(path);
          remaining.delete(subsystem);
        } catch (err) {
          if (this.version === 'v1' && subsystem === HYBRID_UNIFIED_DIR) unifiedError = err;
          else lastError = err;
        }
      }
    }
    if (this.version === 'v1' && remaining.has(HYBRID_UNIFIED_DIR)) {
      this.logger.warn('Failed to remove the cgroup in the unified hierarchy of a hybrid cgroup host', {
        cgroupName: formatCgroupName(name),
        path: remaining.get(HYBRID_UNIFIED_DIR),
        err: errorMessage(unifiedError),
      });
      remaining.delete(HYBRID_UNIFIED_DIR);
    }
    if (remaining.size === 0) return;
    const detail =
      this.version === 'v2'
        ? errorMessage(lastError)
        : `Failed to remove paths: map[${[...remaining].sort(([a], [b]) => a.localeCompare(b)).map(([s, p]) => `${s}:${p}`).join(' ')}]`;
    throw new Error(`unable to destroy cgroup paths for cgroup ${formatCgroupName(name)} : ${detail}`, { cause: lastError });
  }

  /** v2: whether cgroup.events says `populated 1`; a cgroup that is gone is not populated. */
  private async populated(dir: string): Promise<boolean> {
    const file = join(dir, 'cgroup.events');
    let text: string;
    try {
      text = await this.fs.readFile(file);
    } catch (err) {
      if (isNotExist(err) && !(await this.fs.exists(dir))) return false;
      throw new Error(`failed to read ${JSON.stringify(file)}: ${errorMessage(err)}`, { cause: err });
    }
    const m = /^populated ([01])$/m.exec(text);
    if (!m) throw new Error(`no "populated 0|1" line in ${JSON.stringify(file)}: ${JSON.stringify(text)}`);
    return m[1] === '1';
  }

  /**
   * cgroup v2 with cgroup.kill (Linux 5.14+): writes "1" to it, which SIGKILLs every process in the cgroup and
   * below it, then polls cgroup.events until `populated 0` (5 looks, 10 ms doubling between them, as libcontainer
   * bounds its RemovePaths); true once empty, an error naming the file when it stays populated. false without
   * cgroup.kill (v1, older kernels, the v2 root), for the caller to kill the pids one by one.
   */
  async killAllProcesses(name: CgroupName): Promise<boolean> {
    if (this.version !== 'v2') return false;
    const dir = this.unifiedPath(name);
    if (!(await this.fs.exists(join(dir, 'cgroup.kill')))) return false;
    await this.write(dir, 'cgroup.kill', '1');
    let delay = 10;
    for (let attempt = 0; attempt < 5; attempt++) {
      if (attempt > 0) {
        await this.clock.sleep(delay);
        delay *= 2;
      }
      if (!(await this.populated(dir))) return true;
    }
    throw new Error(`cgroup ${formatCgroupName(name)} still has processes after writing "1" to ${JSON.stringify(join(dir, 'cgroup.kill'))}: ${JSON.stringify(join(dir, 'cgroup.events'))} says populated 1`);
  }

  /**
   * The cgroup's OOM counters: v2 memory.events (hierarchical: the cgroup and everything below it); v1 the
   * `oom_kill` field of memory.oom_control (Linux 4.13+; the cgroup's own kills). undefined when the cgroup, its
   * memory controller or the counter is absent. `child`: the directory of that name right below the cgroup.
   */
  async memoryEvents(name: CgroupName, child?: string): Promise<MemoryEvents | undefined> {
    const target = withChild(name, child);
    let file: string;
    if (this.version === 'v2') {
      file = join(this.unifiedPath(target), 'memory.events');
    } else {
      const mount = (await this.subsystemMounts()).get('memory');
      if (mount === undefined) return undefined;
      file = join(cgroupDir(mount, target), 'memory.oom_control');
    }
    let text: string;
    try {
      text = await this.fs.readFile(file);
    } catch (err) {
      if (isNotExist(err)) return undefined;
      throw new Error(`failed to read ${JSON.stringify(file)}: ${errorMessage(err)}`, { cause: err });
    }
    if (this.version === 'v1') {
      const fields = parseFlatKeyed(text, file);
      return fields.oom_kill === undefined ? undefined : { oomKill: fields.oom_kill };
    }
    return parseMemoryEvents(text, file);
  }

  /**
   * The cgroup's pressure stall information (v2 cpu.pressure, memory.pressure, io.pressure). undefined on v1 and
   * when the kernel has no PSI; a resource whose file is absent is left out. `child`: the directory of that name
   * right below the cgroup.
   */
  async pressure(name: CgroupName, child?: string): Promise<PressureStats | undefined> {
    if (this.version !== 'v2') return undefined;
    const dir = this.unifiedPath(withChild(name, child));
    const stats: PressureStats = {};
    let found = false;
    for (const resource of ['cpu', 'memory', 'io'] as const) {
      const file = join(dir, `${resource}.pressure`);
      let text: string;
      try {
        text = await this.fs.readFile(file);
      } catch (err) {
        if (isNotExist(err)) continue;
        throw new Error(`failed to read ${JSON.stringify(file)}: ${errorMessage(err)}`, { cause: err });
      }
      stats[resource] = parsePsi(text, file);
      found = true;
    }
    return found ? stats : undefined;
  }

  /** Go: Pids: every process in the cgroup or below it, in any hierarchy, sorted. */
  async pids(name: CgroupName): Promise<number[]> {
    const pids = new Set<number>();
    const visit = async (path: string): Promise<void> => {
      let procs: string;
      try {
        procs = await this.fs.readFile(join(path, 'cgroup.procs'));
      } catch (err) {
        this.logger.v(4).info('cgroup manager encountered error getting procs for cgroup path', { path, err: errorMessage(err) });
        return;
      }
      for (const line of procs.split('\n')) if (line.trim() !== '') pids.add(Number.parseInt(line, 10));
      for (const child of await this.cgroupChildren(path).catch(() => [])) await visit(join(path, child));
    };
    for (const path of new Set((await this.paths(name)).values())) await visit(path);
    return [...pids].sort((a, b) => a - b);
  }

  /** Go: MemoryUsage: memory.current (v2) or memory.usage_in_bytes (v1). */
  async memoryUsageBytes(name: CgroupName): Promise<number> {
    let path: string;
    if (this.version === 'v2') {
      path = join(this.unifiedPath(name), 'memory.current');
    } else {
      const mount = (await this.subsystemMounts()).get('memory');
      if (mount === undefined) throw new Error('no cgroup v1 mountpoint for memory controller found');
      path = join(cgroupDir(mount, name), 'memory.usage_in_bytes');
    }
    const text = (await this.fs.readFile(path)).trim();
    const value = Number(text);
    if (!Number.isFinite(value)) throw new Error(`unable to parse ${JSON.stringify(text)} as a uint from Cgroup file ${JSON.stringify(path)}`);
    return value;
  }
}
