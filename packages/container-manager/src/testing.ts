// Test doubles for the container manager, published as `@kubelet-ts/container-manager/testing`.
import { posix } from 'node:path';
import { cgroupfsName, parseCgroupfsToCgroupName } from './cgroup-names.js';
import { createCgroupManager } from './create-cgroup-manager.js';
import type { CgroupFs, CgroupManager, CgroupName, CgroupVersion, MemoryEvents, PressureStats, ResourceConfig } from './types.js';

export { RecordingEventRecorder, type RecordedEvent } from '@kubelet-ts/core/testing';

const { dirname, basename, join } = posix;

export type FakeCgroupFsOperation = 'readFile' | 'writeFile' | 'mkdir' | 'rmdir' | 'readdir';

export interface FakeCgroupFsOptions {
  version?: CgroupVersion;
  /** Default /sys/fs/cgroup. */
  root?: string;
  /** v1: the hierarchies mounted under the root. Default cpu, cpuacct, cpuset, memory, pids, hugetlb, blkio, devices, freezer, systemd. */
  subsystems?: string[];
  /** v2: the root's cgroup.controllers. Default cpuset cpu io memory hugetlb pids rdma. */
  controllers?: string[];
  /** v2: the root's cgroup.subtree_control to start with (e.g. to mirror a real mount). Default none. */
  rootSubtreeControl?: string[];
  /** v2: the huge page sizes the hugetlb controller has files for. Default ['2MB']. */
  hugePageSizes?: string[];
  /** v2: whether the kernel has PSI (cpu/memory/io.pressure in every cgroup). Default true. */
  psi?: boolean;
  /** v2: whether the kernel has cgroup.kill (Linux 5.14+). Default true. */
  cgroupKill?: boolean;
  /**
   * v1: a cgroup2 hierarchy mounted at `<root>/unified` as well, with no controllers (systemd's "hybrid" layout,
   * where runc makes each container's cgroup too). Its cgroups have the v2 core files and follow the v2 rules
   * (a process is in one cgroup of it, cgroup.events, cgroup.kill, rmdir EBUSY). Default false.
   */
  hybrid?: boolean;
  /** The root cpuset's cpus and mems. Default '0-3' and '0'. */
  cpus?: string;
  mems?: string;
}

interface InjectedError {
  op: FakeCgroupFsOperation;
  path: string | RegExp;
  code: string;
  /** How many more times it fires; Infinity for always. */
  times: number;
}

/** The counters of v2 memory.events, in the kernel's order. */
const MEMORY_EVENTS = ['low', 'high', 'max', 'oom', 'oom_kill', 'oom_group_kill'] as const;
type MemoryEventName = (typeof MEMORY_EVENTS)[number];
type MemoryEventCounters = Record<MemoryEventName, number>;

const MEMORY_UNLIMITED_V1 = '9223372036854771712';
const PAGE_SIZE = 4096;
const DEFAULT_V1_SUBSYSTEMS = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'freezer', 'systemd'];
const DEFAULT_V2_CONTROLLERS = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma'];
/** The v2 controllers the kernel knows, in its subsystem order (cgroup.controllers and cgroup.subtree_control list them so). */
export const KERNEL_V2_CONTROLLERS = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma', 'misc'] as const;
/** The thread-aware controllers (cgrp_dfl_threaded_ss_mask); the others are domain controllers. */
const THREADED_CONTROLLERS = ['cpuset', 'cpu', 'pids'];
/** v2 files with no write handler: writing them fails with EINVAL. */
const V2_READ_ONLY = /^(cgroup\.(controllers|events|stat)|cpu\.stat(\.local)?|memory\.(current|peak|events|events\.local|stat|swap\.current|swap\.events)|pids\.(current|events)|io\.stat|cpuset\.(cpus|mems)\.effective|rdma\.current|misc\.(current|events|capacity)|hugetlb\..+\.(current|events|events\.local|rsvd\.current|numa_stat))$/;
/** v2 files with no read handler (cgroup.kill is write-only). */
const V2_WRITE_ONLY = new Set(['cgroup.kill']);
/** v2 files whose content is computed from the tree when read. */
const V2_DYNAMIC = new Set(['cgroup.events', 'cgroup.stat', 'memory.events', 'memory.events.local']);
const PSI_EMPTY = 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n';

function fsError(code: string, op: string, path: string): NodeJS.ErrnoException {
  const text: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EEXIST: 'file already exists',
    EBUSY: 'resource busy or locked',
    EACCES: 'permission denied',
    EINVAL: 'invalid argument',
    ENOTDIR: 'not a directory',
    EISDIR: 'illegal operation on a directory',
    ERANGE: 'result too large',
    ESRCH: 'no such process',
    EAGAIN: 'resource temporarily unavailable',
  };
  const err: NodeJS.ErrnoException = new Error(`${code}: ${text[code] ?? 'error'}, ${op} '${path}'`);
  err.code = code;
  err.syscall = op;
  err.path = path;
  return err;
}

/** The kernel's memparse: a number with an optional K/M/G/T/P/E suffix (powers of 1024); undefined when it is not one. */
function memparse(text: string): number | undefined {
  const m = /^(\d+)([kKmMgGtTpPeE]?)$/.exec(text);
  if (!m) return undefined;
  const shift = { '': 0, k: 10, m: 20, g: 30, t: 40, p: 50, e: 60 }[m[2].toLowerCase()] ?? 0;
  return Number(m[1]) * 2 ** shift;
}

/** A huge page size name as the kernel spells it in hugetlb.<size>.*: 2MB, 1GB, 64KB. */
function hugePageBytes(size: string): number {
  const m = /^(\d+)(KB|MB|GB)$/.exec(size);
  if (!m) throw new Error(`FakeCgroupFs: invalid huge page size ${JSON.stringify(size)} (want e.g. "2MB" or "1GB")`);
  return Number(m[1]) * { KB: 2 ** 10, MB: 2 ** 20, GB: 2 ** 30 }[m[2] as 'KB' | 'MB' | 'GB'];
}

function inKernelOrder(controllers: Iterable<string>): string[] {
  const set = new Set(controllers);
  return KERNEL_V2_CONTROLLERS.filter((c) => set.has(c));
}

/**
 * An in-memory cgroup filesystem that behaves like the kernel where the container manager can tell. v1: a new
 * cgroup directory comes with its hierarchy's control files, cpu.shares is clamped to [2, 262144]. v2 enforces the
 * rules of Documentation/admin-guide/cgroup-v2.rst as the kernel does (errno for errno, checked against a real
 * cgroup2 mount by test/real-cgroup-v2-diff.test.ts):
 * - a cgroup's cgroup.controllers is its parent's cgroup.subtree_control; "+c" there fails ENOENT unless the
 *   cgroup has c, an unknown controller or token fails EINVAL, "-c" fails EBUSY while a child enables c in its own
 *   subtree_control; a controller's interface files exist only where it is enabled (most never in the root);
 * - no internal processes: a non-root cgroup with processes cannot enable a domain controller (EBUSY), and no
 *   process can be written into a non-root cgroup whose subtree_control has a domain controller (EBUSY);
 * - cgroup.procs moves a process (one cgroup at a time); an exited pid fails ESRCH;
 * - cgroup.kill ("1"; other numbers ERANGE) kills the subtree, cgroup.events follows populated/frozen, memory.events
 *   counts what simulateOomKill does, PSI files have the kernel's format;
 * - rmdir fails EBUSY while the cgroup has children or processes below it; files cannot be created (EACCES),
 *   read-only ones cannot be written nor cgroup.kill read (EINVAL); cgroup.max.depth/descendants make mkdir fail EAGAIN.
 * In both versions every write is recorded and errors can be injected per operation and path.
 */
export class FakeCgroupFs implements CgroupFs {
  readonly version: CgroupVersion;
  readonly root: string;
  /** v1 with `hybrid`: where the cgroup2 hierarchy is mounted (`<root>/unified`); undefined otherwise. */
  readonly unifiedRoot?: string;
  /** Every successful writeFile, in order. */
  readonly writes: Array<{ path: string; data: string }> = [];
  /** v2: the pids killed through cgroup.kill or simulateOomKill, in order. */
  readonly killed: number[] = [];
  /**
   * v2: when true, processes killed through cgroup.kill stay in their cgroups (as a process does between SIGKILL
   * and its exit) until releaseKilled().
   */
  holdKilled = false;
  private readonly dirs = new Set<string>();
  private readonly files = new Map<string, string>();
  private readonly injected: InjectedError[] = [];
  private readonly hugePageSizes: string[];
  private readonly psi: boolean;
  private readonly cgroupKill: boolean;
  private readonly cpus: string;
  private readonly mems: string;
  /** Pids that exited: writing them to cgroup.procs fails ESRCH. */
  private readonly exited = new Set<number>();
  private readonly pendingKill = new Set<number>();
  /** v2 memory.events (hierarchical) and memory.events.local per cgroup directory; v1 oom_kill per memory cgroup. */
  private readonly memoryEvents = new Map<string, MemoryEventCounters>();
  private readonly memoryEventsLocal = new Map<string, MemoryEventCounters>();

  constructor(opts: FakeCgroupFsOptions = {}) {
    this.version = opts.version ?? 'v1';
    this.root = opts.root ?? '/sys/fs/cgroup';
    this.hugePageSizes = opts.hugePageSizes ?? ['2MB'];
    for (const size of this.hugePageSizes) hugePageBytes(size);
    this.psi = opts.psi ?? true;
    this.cgroupKill = opts.cgroupKill ?? true;
    this.cpus = opts.cpus ?? '0-3';
    this.mems = opts.mems ?? '0';
    this.dirs.add(this.root);
    if (opts.hybrid && this.version !== 'v1') throw new Error('FakeCgroupFs: hybrid is a v1 layout (v1 hierarchies and a cgroup2 one at <root>/unified)');
    if (opts.hybrid) {
      this.unifiedRoot = join(this.root, 'unified');
      this.dirs.add(this.unifiedRoot);
      this.addCgroupFiles(this.unifiedRoot, true);
    }
    if (this.version === 'v1') {
      for (const subsystem of opts.subsystems ?? DEFAULT_V1_SUBSYSTEMS) {
        const mount = join(this.root, subsystem);
        this.dirs.add(mount);
        this.addCgroupFiles(mount, true);
        if (subsystem === 'cpuset') {
          this.files.set(join(mount, 'cpuset.cpus'), `${this.cpus}\n`);
          this.files.set(join(mount, 'cpuset.mems'), `${this.mems}\n`);
        }
      }
    } else {
      const controllers = opts.controllers ?? DEFAULT_V2_CONTROLLERS;
      const unknown = controllers.filter((c) => !(KERNEL_V2_CONTROLLERS as readonly string[]).includes(c));
      if (unknown.length > 0) throw new Error(`FakeCgroupFs: unknown cgroup v2 controllers ${unknown.join(', ')} (known: ${KERNEL_V2_CONTROLLERS.join(' ')})`);
      const subtree = opts.rootSubtreeControl ?? [];
      const missing = subtree.filter((c) => !controllers.includes(c));
      if (missing.length > 0) throw new Error(`FakeCgroupFs: rootSubtreeControl ${missing.join(', ')} not in the root's controllers`);
      this.files.set(join(this.root, 'cgroup.controllers'), `${inKernelOrder(controllers).join(' ')}\n`);
      this.files.set(join(this.root, 'cgroup.subtree_control'), `${inKernelOrder(subtree).join(' ')}\n`);
      this.addCgroupFiles(this.root, true);
    }
  }

  /** Makes an operation on a path (or paths matching a RegExp) fail with an errno code, `times` times (default always). */
  injectError(op: FakeCgroupFsOperation, path: string | RegExp, code: string, times = Infinity): void {
    this.injected.push({ op, path, code, times });
  }

  clearErrors(): void {
    this.injected.length = 0;
  }

  private maybeFail(op: FakeCgroupFsOperation, path: string): void {
    const hit = this.injected.find((e) => e.op === op && e.times > 0 && (typeof e.path === 'string' ? e.path === path : e.path.test(path)));
    if (!hit) return;
    hit.times--;
    const syscall = { readFile: 'open', writeFile: 'open', mkdir: 'mkdir', rmdir: 'rmdir', readdir: 'scandir' }[op];
    throw fsError(hit.code, syscall, path);
  }

  /** v1 with `hybrid`: whether a path is in the cgroup2 hierarchy at `<root>/unified`. */
  private isUnified(path: string): boolean {
    return this.unifiedRoot !== undefined && (path === this.unifiedRoot || path.startsWith(`${this.unifiedRoot}/`));
  }

  /** Whether a path is in a cgroup2 hierarchy (all of a v2 fs, the unified one of a hybrid v1 fs). */
  private isV2Path(path: string): boolean {
    return this.version === 'v2' || this.isUnified(path);
  }

  /** The mount of the hierarchy a path is in: the root on v2, `<root>/unified` or `<root>/<subsystems>` on v1. */
  private hierarchyOf(path: string): string {
    if (this.version === 'v2') return this.root;
    if (this.isUnified(path)) return this.unifiedRoot!;
    return join(this.root, path.slice(this.root.length + 1).split('/')[0]);
  }

  /** The v1 subsystems of the hierarchy a path is in ([] for v2 and the unified hierarchy of a hybrid fs). */
  private subsystemsOf(path: string): string[] {
    if (this.isV2Path(path)) return [];
    return path.slice(this.root.length + 1).split('/')[0].split(',');
  }

  private addCgroupFiles(dir: string, isRoot: boolean): void {
    const set = (file: string, value: string) => this.files.set(join(dir, file), value);
    if (this.isV2Path(dir)) {
      // The core files (kernel/cgroup/cgroup.c cgroup_base_files and cgroup_psi_files).
      set('cgroup.procs', '');
      set('cgroup.threads', '');
      if (!isRoot || this.isUnified(dir)) set('cgroup.subtree_control', '\n');
      set('cgroup.max.depth', 'max\n');
      set('cgroup.max.descendants', 'max\n');
      set('cgroup.stat', '');
      set('cpu.stat', 'usage_usec 0\nuser_usec 0\nsystem_usec 0\n');
      if (!isRoot) {
        set('cgroup.type', 'domain\n');
        set('cgroup.events', '');
        set('cgroup.freeze', '0\n');
        if (this.cgroupKill) set('cgroup.kill', '');
      }
      if (this.psi) {
        for (const file of ['cpu.pressure', 'memory.pressure', 'io.pressure']) set(file, PSI_EMPTY);
        set('cgroup.pressure', '1\n');
      }
      // The unified hierarchy of a hybrid host has no controllers: they are all bound to v1.
      if (this.isUnified(dir)) set('cgroup.controllers', '\n');
      else this.syncControllers(dir);
      return;
    }
    set('cgroup.procs', '');
    set('tasks', '');
    set('notify_on_release', '0\n');
    const subsystems = this.subsystemsOf(dir);
    if (subsystems.includes('cpu')) {
      set('cpu.shares', '1024\n');
      set('cpu.cfs_period_us', '100000\n');
      set('cpu.cfs_quota_us', '-1\n');
    }
    if (subsystems.includes('memory')) {
      set('memory.limit_in_bytes', `${MEMORY_UNLIMITED_V1}\n`);
      set('memory.usage_in_bytes', '0\n');
      set('memory.oom_control', 'oom_kill_disable 0\nunder_oom 0\noom_kill 0\n');
    }
    if (subsystems.includes('pids') && !isRoot) set('pids.max', 'max\n');
    if (subsystems.includes('cpuset')) {
      set('cpuset.cpus', '\n');
      set('cpuset.mems', '\n');
    }
  }

  /** v2: the interface files of a controller in a cgroup (the kernel's cftypes; most are not on the root). */
  private controllerFiles(controller: string, isRoot: boolean): Record<string, string> {
    switch (controller) {
      case 'cpu':
        return isRoot ? {} : { 'cpu.weight': '100\n', 'cpu.weight.nice': '0\n', 'cpu.max': 'max 100000\n', 'cpu.max.burst': '0\n', 'cpu.idle': '0\n' };
      case 'memory':
        return isRoot
          ? { 'memory.stat': '' }
          : {
              'memory.current': '0\n',
              'memory.min': '0\n',
              'memory.low': '0\n',
              'memory.high': 'max\n',
              'memory.max': 'max\n',
              'memory.peak': '0\n',
              'memory.oom.group': '0\n',
              'memory.events': '',
              'memory.events.local': '',
              'memory.stat': '',
              'memory.swap.current': '0\n',
              'memory.swap.max': 'max\n',
            };
      case 'pids':
        return isRoot ? {} : { 'pids.max': 'max\n', 'pids.current': '0\n', 'pids.events': 'max 0\n' };
      case 'cpuset': {
        const effective = { 'cpuset.cpus.effective': `${this.cpus}\n`, 'cpuset.mems.effective': `${this.mems}\n` };
        return isRoot ? effective : { 'cpuset.cpus': '\n', 'cpuset.mems': '\n', ...effective, 'cpuset.cpus.partition': 'member\n' };
      }
      case 'io':
        return isRoot ? { 'io.stat': '' } : { 'io.max': '', 'io.weight': 'default 100\n', 'io.stat': '' };
      case 'hugetlb': {
        if (isRoot) return {};
        const files: Record<string, string> = {};
        for (const size of this.hugePageSizes) {
          for (const [suffix, initial] of Object.entries({
            current: '0\n',
            max: 'max\n',
            events: 'max 0\n',
            'events.local': 'max 0\n',
            'rsvd.current': '0\n',
            'rsvd.max': 'max\n',
            numa_stat: 'total=0 N0=0\n',
          })) {
            files[`hugetlb.${size}.${suffix}`] = initial;
          }
        }
        return files;
      }
      case 'rdma':
        return isRoot ? {} : { 'rdma.max': '', 'rdma.current': '' };
      case 'misc':
        return isRoot ? { 'misc.capacity': '' } : { 'misc.max': '', 'misc.current': '', 'misc.events': '' };
      default:
        return {};
    }
  }

  /** v2: a cgroup's controllers (its parent's subtree_control; the root's are fixed), and their files exist. */
  private syncControllers(dir: string): void {
    const isRoot = dir === this.root;
    const enabled = isRoot ? this.controllersOf(dir) : this.subtreeOf(dirname(dir));
    if (!isRoot) this.files.set(join(dir, 'cgroup.controllers'), `${enabled.join(' ')}\n`);
    for (const controller of KERNEL_V2_CONTROLLERS) {
      for (const [file, initial] of Object.entries(this.controllerFiles(controller, isRoot))) {
        const path = join(dir, file);
        if (!enabled.includes(controller)) this.files.delete(path);
        else if (!this.files.has(path)) this.files.set(path, initial);
      }
    }
    if (!enabled.includes('memory')) {
      this.memoryEvents.delete(dir);
      this.memoryEventsLocal.delete(dir);
    }
    for (const child of this.childDirs(dir)) this.syncControllers(child);
  }

  private words(path: string): string[] {
    return (this.files.get(path) ?? '').trim().split(/\s+/).filter(Boolean);
  }

  private controllersOf(dir: string): string[] {
    return this.words(join(dir, 'cgroup.controllers'));
  }

  private subtreeOf(dir: string): string[] {
    return this.words(join(dir, 'cgroup.subtree_control'));
  }

  async readFile(path: string): Promise<string> {
    this.maybeFail('readFile', path);
    const content = this.files.get(path);
    if (content === undefined) throw fsError(this.dirs.has(path) ? 'EISDIR' : 'ENOENT', 'open', path);
    // cgroup_seqfile_show: a file with no show handler fails the read (not the open) with EINVAL.
    if (this.isV2Path(path) && V2_WRITE_ONLY.has(basename(path))) throw fsError('EINVAL', 'read', path);
    return this.dynamicContent(path) ?? content;
  }

  /** v2: the content of a file the kernel computes when it is read (cgroup.events, cgroup.stat, memory.events). */
  private dynamicContent(path: string): string | undefined {
    if (!this.isV2Path(path) || !this.files.has(path)) return undefined;
    const file = basename(path);
    const dir = dirname(path);
    if (file === 'cgroup.events') return `populated ${this.populated(dir) ? 1 : 0}\nfrozen ${this.frozen(dir) ? 1 : 0}\n`;
    if (file === 'cgroup.stat') return `nr_descendants ${this.dirsUnder(dir).length}\nnr_dying_descendants 0\n`;
    if (file === 'memory.events' || file === 'memory.events.local') {
      const counters = (file === 'memory.events' ? this.memoryEvents : this.memoryEventsLocal).get(dir);
      return MEMORY_EVENTS.map((name) => `${name} ${counters?.[name] ?? 0}\n`).join('');
    }
    return undefined;
  }

  async writeFile(path: string, data: string): Promise<void> {
    this.maybeFail('writeFile', path);
    if (!this.files.has(path)) throw fsError(this.dirs.has(path) ? 'EISDIR' : 'EACCES', 'open', path);
    if (this.isV2Path(path)) {
      this.writeV2(path, data);
      this.writes.push({ path, data });
      return;
    }
    const file = basename(path);
    let value = data.trim();
    if (file === 'cpu.shares') {
      value = String(Math.min(Math.max(Number.parseInt(value, 10), 2), 262144));
    } else if (file === 'cgroup.procs') {
      const procs = this.files.get(path)!.split('\n').filter(Boolean);
      value = [...procs, value].join('\n');
    }
    this.files.set(path, `${value}\n`);
    this.writes.push({ path, data });
  }

  /** v2 writes, with the kernel's checks and errno (kernel/cgroup/cgroup.c, mm/memcontrol.c, kernel/sched/core.c). */
  private writeV2(path: string, data: string): void {
    const file = basename(path);
    const dir = dirname(path);
    const value = data.trim();
    const fail = (code: string): never => {
      throw fsError(code, 'write', path);
    };
    // cgroup_file_write: a file with no write handler fails the write (not the open) with EINVAL.
    if (V2_READ_ONLY.test(file) || V2_DYNAMIC.has(file)) fail('EINVAL');
    const isInt = (text: string) => /^[+-]?\d+$/.test(text);
    switch (file) {
      case 'cgroup.subtree_control':
        this.applySubtreeControl(dir, value, fail);
        return;
      case 'cgroup.procs':
      case 'cgroup.threads': {
        if (!isInt(value) || Number(value) < 0) fail('EINVAL');
        const pid = Number(value);
        if (pid === 0) throw new Error(`FakeCgroupFs: writing 0 (the writer itself) to ${path} is not modelled; write a pid`);
        if (this.exited.has(pid)) fail('ESRCH');
        const code = this.migrateError(dir);
        if (code) fail(code);
        this.moveProcess(dir, pid);
        return;
      }
      case 'cgroup.kill': {
        if (!isInt(value)) fail('EINVAL');
        if (Number(value) !== 1) fail('ERANGE');
        this.killSubtree(dir);
        return;
      }
      case 'cgroup.freeze': {
        if (!isInt(value)) fail('EINVAL');
        if (Number(value) < 0 || Number(value) > 1) fail('ERANGE');
        this.files.set(path, `${Number(value)}\n`);
        return;
      }
      case 'cgroup.type':
        if (value !== 'threaded') fail('EINVAL');
        throw new Error(`FakeCgroupFs: threaded cgroups are not modelled (write to ${path})`);
      case 'cgroup.max.depth':
      case 'cgroup.max.descendants':
        if (value !== 'max' && (!isInt(value) || Number(value) < 0)) fail('EINVAL');
        this.files.set(path, `${value}\n`);
        return;
      case 'cpu.weight':
        if (!isInt(value)) fail('EINVAL');
        if (Number(value) < 1 || Number(value) > 10000) fail('ERANGE');
        this.files.set(path, `${Number(value)}\n`);
        return;
      case 'cpu.max': {
        const [quotaText, periodText, extra] = value.split(/\s+/);
        const period = periodText === undefined ? Number(this.words(path)[1]) : isInt(periodText) ? Number(periodText) : NaN;
        const quota = quotaText === 'max' ? 'max' : isInt(quotaText ?? '') ? Number(quotaText) : NaN;
        // tg_set_cfs_bandwidth: the period within [1 ms, 1 s], a quota of at least 1 ms.
        if (extra !== undefined || Number.isNaN(period) || Number.isNaN(quota) || period < 1000 || period > 1_000_000 || (quota !== 'max' && quota < 1000)) fail('EINVAL');
        this.files.set(path, `${quota} ${period}\n`);
        return;
      }
      case 'pids.max':
        if (value !== 'max' && (!isInt(value) || Number(value) < 0 || Number(value) > 4194304)) fail('EINVAL');
        this.files.set(path, `${value === 'max' ? 'max' : Number(value)}\n`);
        return;
      case 'memory.oom.group':
        if (!isInt(value)) fail('EINVAL');
        if (Number(value) < 0 || Number(value) > 1) fail('EINVAL');
        this.files.set(path, `${Number(value)}\n`);
        return;
      case 'memory.max':
      case 'memory.high':
      case 'memory.low':
      case 'memory.min':
      case 'memory.swap.max': {
        if (value === 'max') {
          this.files.set(path, 'max\n');
          return;
        }
        const bytes = memparse(value);
        if (bytes === undefined) fail('EINVAL');
        this.files.set(path, `${Math.floor(bytes! / PAGE_SIZE) * PAGE_SIZE}\n`);
        return;
      }
    }
    const huge = /^hugetlb\.(.+)\.(max|rsvd\.max)$/.exec(file);
    if (huge) {
      if (value === 'max') {
        this.files.set(path, 'max\n');
        return;
      }
      const bytes = memparse(value);
      if (bytes === undefined) fail('EINVAL');
      const size = hugePageBytes(huge[1]);
      this.files.set(path, `${Math.floor(bytes! / size) * size}\n`);
      return;
    }
    if (/\.pressure$/.test(file) && file !== 'cgroup.pressure') {
      // A PSI trigger ("some|full <threshold us> <window us>") lives as long as its open file: nothing to keep.
      if (!/^(some|full) \d+ \d+$/.test(value)) fail('EINVAL');
      return;
    }
    if (file === 'cgroup.pressure') {
      if (value !== '0' && value !== '1') fail('ERANGE');
    }
    this.files.set(path, `${value}\n`);
  }

  /** cgroup_subtree_control_write: parse every token, then check each controller, then the no-internal-process rule. */
  private applySubtreeControl(dir: string, request: string, fail: (code: string) => never): void {
    const enable = new Set<string>();
    const disable = new Set<string>();
    for (const token of request.split(/\s+/).filter(Boolean)) {
      const controller = token.slice(1);
      if (!(KERNEL_V2_CONTROLLERS as readonly string[]).includes(controller)) fail('EINVAL');
      if (token.startsWith('+')) {
        enable.add(controller);
        disable.delete(controller);
      } else if (token.startsWith('-')) {
        disable.add(controller);
        enable.delete(controller);
      } else {
        fail('EINVAL');
      }
    }
    const current = new Set(this.subtreeOf(dir));
    const available = this.controllersOf(dir);
    for (const controller of KERNEL_V2_CONTROLLERS) {
      if (enable.has(controller)) {
        if (current.has(controller)) enable.delete(controller);
        else if (!available.includes(controller)) fail('ENOENT');
      } else if (disable.has(controller)) {
        if (!current.has(controller)) disable.delete(controller);
        else if (this.childDirs(dir).some((child) => this.subtreeOf(child).includes(controller))) fail('EBUSY');
      }
    }
    if (enable.size === 0 && disable.size === 0) return;
    // cgroup_vet_subtree_control_enable: the root may mix; a cgroup with processes of its own may enable only
    // thread-aware controllers, and only while it could still become a thread root.
    if (enable.size > 0 && dir !== this.hierarchyOf(dir)) {
      const domainEnable = [...enable].some((c) => !THREADED_CONTROLLERS.includes(c));
      if ((domainEnable || !this.canBeThreadRoot(dir)) && this.processes(dir).length > 0) fail('EBUSY');
    }
    for (const c of enable) current.add(c);
    for (const c of disable) current.delete(c);
    this.files.set(join(dir, 'cgroup.subtree_control'), `${inKernelOrder(current).join(' ')}\n`);
    for (const child of this.childDirs(dir)) this.syncControllers(child);
  }

  /** cgroup_can_be_thread_root: no populated child and no domain controller enabled below it. */
  private canBeThreadRoot(dir: string): boolean {
    if (dir === this.hierarchyOf(dir)) return true;
    if (this.childDirs(dir).some((child) => this.populated(child))) return false;
    return this.subtreeOf(dir).every((c) => THREADED_CONTROLLERS.includes(c));
  }

  /** cgroup_migrate_vet_dst: the errno for moving a process into a cgroup, or undefined when allowed. */
  private migrateError(dir: string): string | undefined {
    if (dir === this.hierarchyOf(dir) || this.canBeThreadRoot(dir)) return undefined;
    return this.subtreeOf(dir).length > 0 ? 'EBUSY' : undefined;
  }

  /** The process leaves its cgroup in dir's hierarchy (a hybrid fs's v1 hierarchies keep theirs) and joins dir. */
  private moveProcess(dir: string, pid: number): void {
    this.exited.delete(pid);
    const top = this.hierarchyOf(dir);
    for (const [file, content] of this.files) {
      if (basename(file) !== 'cgroup.procs' || !(file.startsWith(`${top}/`) || top === this.root)) continue;
      const procs = content.split('\n').filter((line) => line !== '' && line !== String(pid));
      this.files.set(file, procs.length > 0 ? procs.join('\n') + '\n' : '');
    }
    const file = join(dir, 'cgroup.procs');
    this.files.set(file, [...this.processes(dir), pid].join('\n') + '\n');
  }

  private killSubtree(dir: string): void {
    for (const cgroup of [dir, ...this.dirsUnder(dir)]) {
      for (const pid of this.processes(cgroup)) {
        if (this.pendingKill.has(pid)) continue;
        this.killed.push(pid);
        if (this.holdKilled) this.pendingKill.add(pid);
        else this.removeProcess(pid);
      }
    }
  }

  /** v2: the processes killed while holdKilled was set exit now. */
  releaseKilled(): void {
    for (const pid of this.pendingKill) this.removeProcess(pid);
    this.pendingKill.clear();
  }

  /** Whether a cgroup or any below it has a process (cgroup.events populated). */
  populated(dir: string): boolean {
    return [dir, ...this.dirsUnder(dir)].some((d) => this.processes(d).length > 0);
  }

  private frozen(dir: string): boolean {
    const top = this.hierarchyOf(dir);
    for (let d = dir; d !== top && d.startsWith(top); d = dirname(d)) {
      if (this.files.get(join(d, 'cgroup.freeze')) === '1\n') return true;
    }
    return false;
  }

  /**
   * Simulates the OOM killer: `dir`'s memory limit is hit (v2: max and oom counted there and up the tree) and the
   * victim `pid` (default: the first process below `dir`) is killed (oom_kill counted in its cgroup and up; with
   * memory.oom.group 1 on the victim's cgroup or an ancestor up to `dir`, the highest such group's processes all
   * die and oom_group_kill is counted there). v1 counts oom_kill in the victim's memory.oom_control only, as the
   * kernel does. Returns the killed pids.
   */
  simulateOomKill(dir: string, pid?: number): number[] {
    const cgroups = [dir, ...this.dirsUnder(dir)];
    const victim = pid ?? cgroups.flatMap((d) => this.processes(d))[0];
    if (victim === undefined) throw new Error(`FakeCgroupFs: no process below ${dir} to OOM-kill`);
    const victimDir = cgroups.find((d) => this.processes(d).includes(victim));
    if (victimDir === undefined) throw new Error(`FakeCgroupFs: pid ${victim} is not in ${dir} or below it`);
    if (this.version === 'v1') {
      const file = join(victimDir, 'memory.oom_control');
      const content = this.files.get(file);
      if (content === undefined) throw new Error(`FakeCgroupFs: ${victimDir} is not in the memory hierarchy`);
      this.files.set(file, content.replace(/^oom_kill (\d+)$/m, (_, n: string) => `oom_kill ${Number(n) + 1}`));
      this.killed.push(victim);
      this.removeProcess(victim);
      return [victim];
    }
    if (!this.controllersOf(dir).includes('memory')) throw new Error(`FakeCgroupFs: the memory controller is not enabled for ${dir}`);
    this.memoryEvent(dir, 'max');
    this.memoryEvent(dir, 'oom');
    let group: string | undefined;
    for (let d = victimDir; ; d = dirname(d)) {
      if (this.files.get(join(d, 'memory.oom.group')) === '1\n') group = d;
      if (d === dir) break;
    }
    const victims = group ? [group, ...this.dirsUnder(group)].flatMap((d) => this.processes(d).map((p) => [d, p] as const)) : [[victimDir, victim] as const];
    if (group) this.memoryEvent(group, 'oom_group_kill');
    for (const [d, p] of victims) {
      this.memoryEvent(d, 'oom_kill');
      this.killed.push(p);
      this.removeProcess(p);
    }
    return victims.map(([, p]) => p);
  }

  /** memcg_memory_event: counted in the cgroup's memory.events.local, and in memory.events of it and its ancestors below the root. */
  private memoryEvent(dir: string, event: MemoryEventName): void {
    const bump = (map: Map<string, MemoryEventCounters>, d: string) => {
      const counters = map.get(d) ?? { low: 0, high: 0, max: 0, oom: 0, oom_kill: 0, oom_group_kill: 0 };
      counters[event]++;
      map.set(d, counters);
    };
    bump(this.memoryEventsLocal, dir);
    for (let d = dir; d !== this.root && this.controllersOf(d).includes('memory'); d = dirname(d)) bump(this.memoryEvents, d);
  }

  async mkdir(path: string): Promise<void> {
    this.maybeFail('mkdir', path);
    if (this.dirs.has(path) || this.files.has(path)) throw fsError('EEXIST', 'mkdir', path);
    if (!this.dirs.has(dirname(path)) || path === this.root || !path.startsWith(`${this.root}/`)) throw fsError('ENOENT', 'mkdir', path);
    if (this.version === 'v1' && dirname(path) === this.root) throw fsError('EACCES', 'mkdir', path);
    if (this.isV2Path(path)) {
      // cgroup_check_hierarchy_limits: every ancestor's cgroup.max.depth and cgroup.max.descendants.
      const top = this.hierarchyOf(path);
      let depth = 1;
      for (let d = dirname(path); ; d = dirname(d), depth++) {
        const maxDepth = this.files.get(join(d, 'cgroup.max.depth'))?.trim();
        const maxDescendants = this.files.get(join(d, 'cgroup.max.descendants'))?.trim();
        if (maxDepth !== undefined && maxDepth !== 'max' && depth > Number(maxDepth)) throw fsError('EAGAIN', 'mkdir', path);
        if (maxDescendants !== undefined && maxDescendants !== 'max' && this.dirsUnder(d).length >= Number(maxDescendants)) throw fsError('EAGAIN', 'mkdir', path);
        if (d === top) break;
      }
    }
    this.dirs.add(path);
    this.addCgroupFiles(path, false);
  }

  async rmdir(path: string): Promise<void> {
    this.maybeFail('rmdir', path);
    if (!this.dirs.has(path)) throw fsError(this.files.has(path) ? 'ENOTDIR' : 'ENOENT', 'rmdir', path);
    if (this.childDirs(path).length > 0 || this.processes(path).length > 0 || path === this.root || path === this.unifiedRoot) throw fsError('EBUSY', 'rmdir', path);
    this.dirs.delete(path);
    this.memoryEvents.delete(path);
    this.memoryEventsLocal.delete(path);
    for (const file of [...this.files.keys()]) if (dirname(file) === path) this.files.delete(file);
  }

  async readdir(path: string): Promise<string[]> {
    this.maybeFail('readdir', path);
    if (!this.dirs.has(path)) throw fsError(this.files.has(path) ? 'ENOTDIR' : 'ENOENT', 'scandir', path);
    const names = [...this.dirs, ...this.files.keys()].filter((p) => p !== path && dirname(p) === path).map((p) => basename(p));
    return names.sort();
  }

  async exists(path: string): Promise<boolean> {
    return this.dirs.has(path) || this.files.has(path);
  }

  // --- inspection and set-up helpers (synchronous) ---

  /** Whether a directory exists. */
  isDir(path: string): boolean {
    return this.dirs.has(path);
  }

  /** A file's content without its trailing newline; undefined when it does not exist. */
  read(path: string): string | undefined {
    return (this.dynamicContent(path) ?? this.files.get(path))?.replace(/\n$/, '');
  }

  /** Sets a file's content (creating it), as the kernel would report it. */
  setFile(path: string, content: string): void {
    this.files.set(path, content.endsWith('\n') || content === '' ? content : `${content}\n`);
  }

  /** Every directory below a path (not the path itself), sorted. */
  dirsUnder(path: string): string[] {
    return [...this.dirs].filter((d) => d.startsWith(`${path}/`)).sort();
  }

  /** Makes a directory as a cgroup would appear (parents included), without recording writes. */
  mkdirp(path: string): void {
    const parts = path.slice(this.root.length + 1).split('/').filter(Boolean);
    let current = this.root;
    for (const part of parts) {
      current = join(current, part);
      if (this.dirs.has(current)) continue;
      this.dirs.add(current);
      this.addCgroupFiles(current, dirname(current) === this.root && this.version === 'v1');
    }
  }

  /**
   * Puts a process in a cgroup directory (its cgroup.procs). v2 (and a hybrid fs's unified hierarchy): the process
   * moves there from any other cgroup of the hierarchy, and the no-internal-process rule applies as to a write of
   * cgroup.procs (throws an EBUSY error).
   */
  addProcess(dir: string, pid: number): void {
    const file = join(dir, 'cgroup.procs');
    if (this.isV2Path(dir)) {
      if (!this.dirs.has(dir)) throw fsError('ENOENT', 'open', file);
      const code = this.migrateError(dir);
      if (code) throw fsError(code, 'write', file);
      this.moveProcess(dir, pid);
      return;
    }
    const procs = (this.files.get(file) ?? '').split('\n').filter(Boolean);
    this.files.set(file, [...procs, String(pid)].join('\n') + '\n');
  }

  /** Removes a process from every cgroup (as its exit would); v2: writing it to cgroup.procs then fails ESRCH. */
  removeProcess(pid: number): void {
    if (this.version === 'v2') {
      this.exited.add(pid);
      this.pendingKill.delete(pid);
    }
    for (const [file, content] of this.files) {
      if (basename(file) !== 'cgroup.procs') continue;
      const procs = content.split('\n').filter((line) => line !== '' && line !== String(pid));
      this.files.set(file, procs.length > 0 ? procs.join('\n') + '\n' : '');
    }
  }

  /** The processes of one cgroup directory. */
  processes(dir: string): number[] {
    return (this.files.get(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean).map(Number);
  }

  /** The writes to paths matching a RegExp or starting with a prefix. */
  writesTo(pattern: string | RegExp): Array<{ path: string; data: string }> {
    return this.writes.filter((w) => (typeof pattern === 'string' ? w.path.startsWith(pattern) : pattern.test(w.path)));
  }

  private childDirs(path: string): string[] {
    return [...this.dirs].filter((d) => dirname(d) === path && d !== path);
  }
}

export type FakeCgroupManagerMethod = 'exists' | 'create' | 'update' | 'destroy' | 'pids' | 'memoryUsageBytes' | 'listChildren' | 'killAllProcesses' | 'memoryEvents' | 'pressure';

/** A CgroupManager in memory: records created/updated/destroyed cgroups with their configs. */
export class FakeCgroupManager implements CgroupManager {
  readonly created: Array<{ name: CgroupName; resources: ResourceConfig }> = [];
  readonly updated: Array<{ name: CgroupName; resources: ResourceConfig }> = [];
  readonly destroyed: CgroupName[] = [];
  /** Errors to reject with, per method; each is used once unless `persistentErrors`. */
  readonly errors = new Map<FakeCgroupManagerMethod, Error>();
  persistentErrors = false;
  /** Literal name -> the processes in that cgroup. */
  readonly procs = new Map<string, number[]>();
  /** Literal name -> memory usage. */
  readonly memoryUsage = new Map<string, number>();
  /** The cgroups killAllProcesses killed (only those where it returned true). */
  readonly killedCgroups: CgroupName[] = [];
  /** Literal name -> the counters memoryEvents returns for that live cgroup (default `{ oomKill: 0 }`), as set. */
  readonly oomEvents = new Map<string, MemoryEvents>();
  /** Literal name -> the PSI figures pressure returns for that live cgroup on v2 (default none: undefined). */
  readonly pressureStats = new Map<string, PressureStats>();
  /** Whether killAllProcesses can use cgroup.kill; default: on v2 (a kernel with Linux 5.14+). */
  cgroupKill: boolean;
  /** Literal name -> accumulated resources; the root always exists. */
  private readonly live = new Map<string, ResourceConfig>([['/', {}]]);

  constructor(readonly version: CgroupVersion = 'v1') {
    this.cgroupKill = version === 'v2';
  }

  name(name: CgroupName): string {
    return cgroupfsName(name);
  }

  cgroupName(literal: string): CgroupName {
    return parseCgroupfsToCgroupName(literal);
  }

  /** Adds an existing cgroup (and its ancestors) without recording a create. */
  seed(name: CgroupName, resources: ResourceConfig = {}): void {
    for (let i = 0; i <= name.length; i++) if (!this.live.has(cgroupfsName(name.slice(0, i)))) this.live.set(cgroupfsName(name.slice(0, i)), {});
    this.live.set(cgroupfsName(name), { ...resources });
  }

  /** The resources a live cgroup has accumulated (creates and updates merged); undefined if it does not exist. */
  config(name: CgroupName): ResourceConfig | undefined {
    const config = this.live.get(cgroupfsName(name));
    return config && { ...config };
  }

  /** The literal names of the live cgroups, sorted. */
  cgroups(): string[] {
    return [...this.live.keys()].sort();
  }

  private fail(method: FakeCgroupManagerMethod): void {
    const err = this.errors.get(method);
    if (!err) return;
    if (!this.persistentErrors) this.errors.delete(method);
    throw err;
  }

  async exists(name: CgroupName): Promise<boolean> {
    this.fail('exists');
    return this.live.has(cgroupfsName(name));
  }

  async create(name: CgroupName, resources: ResourceConfig = {}): Promise<void> {
    this.fail('create');
    this.created.push({ name: [...name], resources: { ...resources } });
    this.seed(name, { ...this.live.get(cgroupfsName(name)), ...resources });
  }

  async update(name: CgroupName, resources: ResourceConfig): Promise<void> {
    this.fail('update');
    const literal = cgroupfsName(name);
    if (!this.live.has(literal)) throw new Error(`cgroup ${literal} does not exist`);
    this.updated.push({ name: [...name], resources: { ...resources } });
    this.live.set(literal, { ...this.live.get(literal), ...resources });
  }

  async destroy(name: CgroupName): Promise<void> {
    this.fail('destroy');
    const literal = cgroupfsName(name);
    this.destroyed.push([...name]);
    for (const key of [...this.live.keys()]) if (key === literal || key.startsWith(`${literal}/`)) this.live.delete(key);
  }

  async pids(name: CgroupName): Promise<number[]> {
    this.fail('pids');
    const literal = cgroupfsName(name);
    const pids = [...this.procs].filter(([key]) => key === literal || key.startsWith(`${literal}/`)).flatMap(([, p]) => p);
    return [...new Set(pids)].sort((a, b) => a - b);
  }

  async memoryUsageBytes(name: CgroupName): Promise<number> {
    this.fail('memoryUsageBytes');
    return this.memoryUsage.get(cgroupfsName(name)) ?? 0;
  }

  /** Without cgroup.kill returns false; with it, the processes in the cgroup and below it are gone and it returns true. */
  async killAllProcesses(name: CgroupName): Promise<boolean> {
    this.fail('killAllProcesses');
    if (!this.cgroupKill) return false;
    const literal = cgroupfsName(name);
    for (const key of [...this.procs.keys()]) if (key === literal || key.startsWith(literal === '/' ? '/' : `${literal}/`)) this.procs.delete(key);
    this.killedCgroups.push([...name]);
    return true;
  }

  /** The live cgroup's (or its `child`'s) counters from `oomEvents`, `{ oomKill: 0 }` unset; undefined when it does not exist. */
  async memoryEvents(name: CgroupName, child?: string): Promise<MemoryEvents | undefined> {
    this.fail('memoryEvents');
    const literal = cgroupfsName(child === undefined ? name : [...name, child]);
    if (!this.live.has(literal)) return undefined;
    const events = this.oomEvents.get(literal);
    return events ? { ...events } : { oomKill: 0 };
  }

  /** v2: the live cgroup's (or its `child`'s) figures from `pressureStats`; undefined on v1, unset or when it does not exist. */
  async pressure(name: CgroupName, child?: string): Promise<PressureStats | undefined> {
    this.fail('pressure');
    if (this.version !== 'v2') return undefined;
    const literal = cgroupfsName(child === undefined ? name : [...name, child]);
    if (!this.live.has(literal)) return undefined;
    const stats = this.pressureStats.get(literal);
    return stats && structuredClone(stats);
  }

  async listChildren(name: CgroupName): Promise<string[]> {
    this.fail('listChildren');
    const prefix = name.length === 0 ? '/' : `${cgroupfsName(name)}/`;
    return [...this.live.keys()]
      .filter((key) => key.startsWith(prefix) && key !== '/' && !key.slice(prefix.length).includes('/'))
      .map((key) => key.slice(prefix.length))
      .sort();
  }
}

/**
 * Makes a real cgroup (e.g. a kubelet's `--cgroup-root`, which must exist before the kubelet starts, as in Go) on
 * the host's cgroupfs: for harnesses that run several kubelets on one host, each under a root of its own.
 */
export async function ensureHostCgroup(literal: string): Promise<void> {
  const manager = await createCgroupManager({ driver: 'cgroupfs' });
  await manager.create(parseCgroupfsToCgroupName(literal));
}

/** Removes a real cgroup and everything under it (processes still in it are killed first); a missing one is fine. */
export async function removeHostCgroup(literal: string): Promise<void> {
  const manager = await createCgroupManager({ driver: 'cgroupfs' });
  await manager.destroy(parseCgroupfsToCgroupName(literal));
}
export { FAKE_SYSTEMD_SLICE_PROPERTIES, FakeSystemdManager, type FakeSystemdCall, type FakeSystemdFs, type FakeSystemdManagerOptions, type FakeSystemdUnit, type FakeSystemdUnitState } from './testing-systemd.js';
export { InMemorySystemdUnits, type InMemorySystemdCall } from './testing-systemd-memory.js';
