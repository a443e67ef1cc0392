// Test doubles for the container manager, published as `@kubelet-ts/container-manager/testing`.
import { posix } from 'node:path';
import { cgroupfsName, parseCgroupfsToCgroupName } from './cgroup-names.js';
import { createCgroupManager } from './cgroup-manager.js';
import type { CgroupFs, CgroupManager, CgroupName, CgroupVersion, ResourceConfig } from './types.js';

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

const MEMORY_UNLIMITED_V1 = '9223372036854771712';
const DEFAULT_V1_SUBSYSTEMS = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'freezer', 'systemd'];
const DEFAULT_V2_CONTROLLERS = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma'];

function fsError(code: string, op: string, path: string): NodeJS.ErrnoException {
  const text: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EEXIST: 'file already exists',
    EBUSY: 'resource busy or locked',
    EACCES: 'permission denied',
    EINVAL: 'invalid argument',
    ENOTDIR: 'not a directory',
    EISDIR: 'illegal operation on a directory',
  };
  const err: NodeJS.ErrnoException = new Error(`${code}: ${text[code] ?? 'error'}, ${op} '${path}'`);
  err.code = code;
  err.syscall = op;
  err.path = path;
  return err;
}

/**
 * An in-memory cgroup filesystem that behaves like the kernel's where the container manager can tell: a new
 * cgroup directory comes with its control files (per v1 hierarchy, or v2's with the controllers its parent
 * enables), files cannot be created or removed, cpu.shares is clamped to [2, 262144], rmdir fails with EBUSY
 * while a cgroup has children or processes. Every write is recorded; errors can be injected per operation and path.
 */
export class FakeCgroupFs implements CgroupFs {
  readonly version: CgroupVersion;
  readonly root: string;
  /** Every successful writeFile, in order. */
  readonly writes: Array<{ path: string; data: string }> = [];
  private readonly dirs = new Set<string>();
  private readonly files = new Map<string, string>();
  private readonly injected: InjectedError[] = [];

  constructor(opts: FakeCgroupFsOptions = {}) {
    this.version = opts.version ?? 'v1';
    this.root = opts.root ?? '/sys/fs/cgroup';
    this.dirs.add(this.root);
    if (this.version === 'v1') {
      for (const subsystem of opts.subsystems ?? DEFAULT_V1_SUBSYSTEMS) {
        const mount = join(this.root, subsystem);
        this.dirs.add(mount);
        this.addCgroupFiles(mount, true);
        if (subsystem === 'cpuset') {
          this.files.set(join(mount, 'cpuset.cpus'), `${opts.cpus ?? '0-3'}\n`);
          this.files.set(join(mount, 'cpuset.mems'), `${opts.mems ?? '0'}\n`);
        }
      }
    } else {
      this.files.set(join(this.root, 'cgroup.controllers'), `${(opts.controllers ?? DEFAULT_V2_CONTROLLERS).join(' ')}\n`);
      this.files.set(join(this.root, 'cgroup.subtree_control'), '\n');
      this.files.set(join(this.root, 'cgroup.procs'), '');
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

  /** The v1 subsystems of the hierarchy a path is in ([] for v2). */
  private subsystemsOf(path: string): string[] {
    if (this.version === 'v2') return [];
    return path.slice(this.root.length + 1).split('/')[0].split(',');
  }

  private addCgroupFiles(dir: string, isRoot: boolean): void {
    const set = (file: string, value: string) => this.files.set(join(dir, file), value);
    set('cgroup.procs', '');
    if (this.version === 'v2') {
      set('cgroup.subtree_control', '\n');
      this.syncControllers(dir);
      return;
    }
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
    }
    if (subsystems.includes('pids') && !isRoot) set('pids.max', 'max\n');
    if (subsystems.includes('cpuset')) {
      set('cpuset.cpus', '\n');
      set('cpuset.mems', '\n');
    }
  }

  /** v2: a cgroup's cgroup.controllers is its parent's subtree_control, and the files of those controllers exist. */
  private syncControllers(dir: string): void {
    const enabled = (this.files.get(join(dirname(dir), 'cgroup.subtree_control')) ?? '').trim().split(/\s+/).filter(Boolean);
    this.files.set(join(dir, 'cgroup.controllers'), `${enabled.join(' ')}\n`);
    const controllerFiles: Record<string, Record<string, string>> = {
      cpu: { 'cpu.weight': '100\n', 'cpu.max': 'max 100000\n' },
      memory: { 'memory.max': 'max\n', 'memory.current': '0\n' },
      pids: { 'pids.max': 'max\n' },
      cpuset: { 'cpuset.cpus': '\n', 'cpuset.mems': '\n' },
    };
    for (const [controller, files] of Object.entries(controllerFiles)) {
      for (const [file, initial] of Object.entries(files)) {
        const path = join(dir, file);
        if (!enabled.includes(controller)) this.files.delete(path);
        else if (!this.files.has(path)) this.files.set(path, initial);
      }
    }
  }

  async readFile(path: string): Promise<string> {
    this.maybeFail('readFile', path);
    const content = this.files.get(path);
    if (content === undefined) throw fsError(this.dirs.has(path) ? 'EISDIR' : 'ENOENT', 'open', path);
    return content;
  }

  async writeFile(path: string, data: string): Promise<void> {
    this.maybeFail('writeFile', path);
    if (!this.files.has(path)) throw fsError(this.dirs.has(path) ? 'EISDIR' : 'EACCES', 'open', path);
    const file = basename(path);
    let value = data.trim();
    if (file === 'cpu.shares') {
      value = String(Math.min(Math.max(Number.parseInt(value, 10), 2), 262144));
    } else if (file === 'cgroup.subtree_control') {
      value = this.applySubtreeControl(path, value);
      this.files.set(path, `${value}\n`);
      for (const child of this.childDirs(dirname(path))) this.syncControllers(child);
    } else if (file === 'cgroup.procs') {
      const procs = this.files.get(path)!.split('\n').filter(Boolean);
      value = [...procs, value].join('\n');
    }
    this.files.set(path, `${value}\n`);
    this.writes.push({ path, data });
  }

  private applySubtreeControl(path: string, request: string): string {
    const dir = dirname(path);
    const available = (this.files.get(join(dir, 'cgroup.controllers')) ?? '').trim().split(/\s+/);
    const enabled = new Set((this.files.get(path) ?? '').trim().split(/\s+/).filter(Boolean));
    for (const token of request.split(/\s+/).filter(Boolean)) {
      const controller = token.slice(1);
      if (!available.includes(controller)) throw fsError('ENOENT', 'write', path);
      if (token.startsWith('+')) enabled.add(controller);
      else if (token.startsWith('-')) enabled.delete(controller);
      else throw fsError('EINVAL', 'write', path);
    }
    return [...available].filter((c) => enabled.has(c)).join(' ');
  }

  async mkdir(path: string): Promise<void> {
    this.maybeFail('mkdir', path);
    if (this.dirs.has(path) || this.files.has(path)) throw fsError('EEXIST', 'mkdir', path);
    if (!this.dirs.has(dirname(path)) || path === this.root || !path.startsWith(`${this.root}/`)) throw fsError('ENOENT', 'mkdir', path);
    if (this.version === 'v1' && dirname(path) === this.root) throw fsError('EACCES', 'mkdir', path);
    this.dirs.add(path);
    this.addCgroupFiles(path, false);
  }

  async rmdir(path: string): Promise<void> {
    this.maybeFail('rmdir', path);
    if (!this.dirs.has(path)) throw fsError(this.files.has(path) ? 'ENOTDIR' : 'ENOENT', 'rmdir', path);
    if (this.childDirs(path).length > 0 || this.processes(path).length > 0 || path === this.root) throw fsError('EBUSY', 'rmdir', path);
    this.dirs.delete(path);
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
    return this.files.get(path)?.replace(/\n$/, '');
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

  /** Puts a process in a cgroup directory (its cgroup.procs). */
  addProcess(dir: string, pid: number): void {
    const file = join(dir, 'cgroup.procs');
    const procs = (this.files.get(file) ?? '').split('\n').filter(Boolean);
    this.files.set(file, [...procs, String(pid)].join('\n') + '\n');
  }

  /** Removes a process from every cgroup (as its exit would). */
  removeProcess(pid: number): void {
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

export type FakeCgroupManagerMethod = 'exists' | 'create' | 'update' | 'destroy' | 'pids' | 'memoryUsageBytes' | 'listChildren';

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
  /** Literal name -> accumulated resources; the root always exists. */
  private readonly live = new Map<string, ResourceConfig>([['/', {}]]);

  constructor(readonly version: CgroupVersion = 'v1') {}

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
