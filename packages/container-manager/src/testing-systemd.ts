// FakeSystemdManager: org.freedesktop.systemd1's Manager served on a bus (a private dbus-daemon in tests), keeping
// transient slice units and making their cgroup directories the way systemd does, on a given cgroup root (a
// FakeCgroupFs or a temporary directory). It is what the systemd cgroup driver is proven against where no systemd
// can be booted.
import { DBusConnection, type DBusMessage, type DBusValue, type DBusVariant } from '@kubelet-ts/core';
import { expandSlice } from './systemd-names.js';
import { SYSTEMD_NO_SUCH_UNIT, SYSTEMD_UNIT_EXISTS } from './systemd-units.js';
import type { CgroupFs, CgroupVersion } from './types.js';

/** The part of a cgroup filesystem the fake systemd uses. */
export type FakeSystemdFs = Pick<CgroupFs, 'mkdir' | 'rmdir' | 'writeFile' | 'readdir' | 'exists'>;

export interface FakeSystemdManagerOptions {
  fs: FakeSystemdFs;
  version: CgroupVersion;
  /** Where the hierarchies are: v1 `<mountRoot>/<controller>`, v2 the unified root itself. */
  mountRoot: string;
  /** v1: the hierarchies a unit's cgroup is made in (those that exist under mountRoot). Default cpu, cpuacct, memory, pids, blkio. */
  v1Controllers?: string[];
}

export type FakeSystemdUnitState = 'active' | 'inactive' | 'failed';

export interface FakeSystemdUnit {
  name: string;
  state: FakeSystemdUnitState;
  /** The properties set, by name, as received (signature and value). */
  properties: Map<string, DBusVariant>;
  /** Started by systemd itself as the parent slice of another unit. */
  implicit: boolean;
}

export interface FakeSystemdCall {
  member: string;
  /** The decoded arguments, as they came over the bus. */
  args: DBusValue[];
  signature: string;
}

const BUS_NAME = 'org.freedesktop.systemd1';
const OBJECT_PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';
const INVALID_ARGS = 'org.freedesktop.DBus.Error.InvalidArgs';
const PROPERTY_READ_ONLY = 'org.freedesktop.DBus.Error.PropertyReadOnly';
const NOT_SUPPORTED = 'org.freedesktop.DBus.Error.NotSupported';
const UNKNOWN_METHOD = 'org.freedesktop.DBus.Error.UnknownMethod';
const JOB_MODES = ['replace', 'fail', 'isolate', 'ignore-dependencies', 'ignore-requirements', 'replace-irreversibly', 'flush', 'triggering'];
const UINT64_MAX = 2n ** 64n - 1n;
const DEFAULT_CPU_PERIOD_USEC = 100_000n;
const DEFAULT_V1_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids', 'blkio'];

/** The slice properties the fake knows, with their D-Bus signatures (systemd's dbus-unit.c / dbus-cgroup.c). */
export const FAKE_SYSTEMD_SLICE_PROPERTIES: Readonly<Record<string, string>> = {
  Description: 's',
  Wants: 'as',
  DefaultDependencies: 'b',
  Delegate: 'b',
  CPUAccounting: 'b',
  CPUShares: 't',
  CPUWeight: 't',
  CPUQuotaPerSecUSec: 't',
  CPUQuotaPeriodUSec: 't',
  MemoryAccounting: 'b',
  MemoryLimit: 't',
  MemoryMax: 't',
  TasksAccounting: 'b',
  TasksMax: 't',
  BlockIOAccounting: 'b',
  IOAccounting: 'b',
  DevicePolicy: 's',
  DeviceAllow: 'a(ss)',
  AllowedCPUs: 'ay',
  AllowedMemoryNodes: 'ay',
};

class FakeBusError extends Error {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super(message);
  }
}

/** The parent slice of a slice: "a-b.slice" -> "a.slice", "a.slice" -> "-.slice". */
function parentSlice(slice: string): string {
  const name = slice.slice(0, -'.slice'.length);
  const dash = name.lastIndexOf('-');
  return dash < 0 ? '-.slice' : `${name.slice(0, dash)}.slice`;
}

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === code;
}

export class FakeSystemdManager {
  /** Every Manager call, in order. */
  readonly calls: FakeSystemdCall[] = [];
  /** The loaded units (active or failed); a stopped or reset transient unit is gone, as systemd collects it. */
  readonly units = new Map<string, FakeSystemdUnit>();
  /** Errors of cgroup realization, which systemd logs and does not fail the job for. */
  readonly realizeErrors: Array<{ unit: string; error: Error }> = [];
  /** JobRemoved signals sent, in order. */
  readonly jobsRemoved: Array<{ id: number; job: string; unit: string; result: string }> = [];
  /** When true, jobs never send JobRemoved (a client waiting for one times out). */
  withholdJobRemoved = false;
  /** When true, JobRemoved is sent before the method's reply (a client must still see it). */
  signalBeforeReply = false;
  private readonly fs: FakeSystemdFs;
  private readonly version: CgroupVersion;
  private readonly mountRoot: string;
  private readonly v1Controllers: string[];
  private readonly failNext: string[] = [];
  private connection?: DBusConnection;
  private jobId = 0;
  private queue: Promise<void> = Promise.resolve();

  private constructor(
    private readonly address: string,
    options: FakeSystemdManagerOptions,
  ) {
    if (options.version !== 'v1' && options.version !== 'v2') throw new Error(`FakeSystemdManager: version must be "v1" or "v2", got ${JSON.stringify(options.version)}`);
    if (!options.mountRoot?.startsWith('/')) throw new Error(`FakeSystemdManager: mountRoot must be an absolute path, got ${JSON.stringify(options.mountRoot)}`);
    this.fs = options.fs;
    this.version = options.version;
    this.mountRoot = options.mountRoot.replace(/\/+$/, '') || '/';
    this.v1Controllers = options.v1Controllers ?? DEFAULT_V1_CONTROLLERS;
  }

  /** Connects to the bus at address and serves org.freedesktop.systemd1 there. */
  static async start(address: string, options: FakeSystemdManagerOptions): Promise<FakeSystemdManager> {
    const fake = new FakeSystemdManager(address, options);
    await fake.reconnect();
    return fake;
  }

  /** Connects again (after the bus restarted) and owns the name again; the units are kept. */
  async reconnect(): Promise<void> {
    await this.connection?.close();
    const connection = await DBusConnection.connect(this.address);
    connection.onMethodCall((call) => {
      this.queue = this.queue.then(() => this.handle(connection, call));
    });
    const owned = await connection.requestName(BUS_NAME);
    if (owned !== 1) {
      await connection.close();
      throw new Error(`FakeSystemdManager: could not own ${BUS_NAME} on ${this.address} (RequestName answered ${owned})`);
    }
    this.connection = connection;
  }

  /** The next job (start or stop) ends with this result instead of "done" ("failed", "canceled", "timeout", ...). */
  failNextJob(result = 'failed'): void {
    this.failNext.push(result);
  }

  unit(name: string): FakeSystemdUnit | undefined {
    return this.units.get(name);
  }

  /** Calls of one method, in order. */
  callsOf(member: string): FakeSystemdCall[] {
    return this.calls.filter((c) => c.member === member);
  }

  /** The cgroup directories of a slice: one per v1 hierarchy, or the one v2 directory. */
  cgroupPaths(slice: string): string[] {
    const path = expandSlice(slice);
    const rel = path === '/' ? '' : path;
    if (this.version === 'v2') return [`${this.mountRoot}${rel}`];
    return this.v1Controllers.map((c) => `${this.mountRoot}/${c}${rel}`);
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await this.queue;
    await connection?.close();
  }

  private async handle(connection: DBusConnection, call: DBusMessage): Promise<void> {
    const member = call.member ?? '';
    if (call.interface === MANAGER) this.calls.push({ member, args: call.body, signature: call.signature ?? '' });
    try {
      if (call.interface !== MANAGER || call.path !== OBJECT_PATH) {
        throw new FakeBusError(UNKNOWN_METHOD, `Unknown method ${member} or interface ${call.interface}.`);
      }
      switch (member) {
        case 'Subscribe':
        case 'Unsubscribe':
          this.expectSignature(call, '');
          return connection.reply(call);
        case 'StartTransientUnit':
          return await this.startTransientUnit(connection, call);
        case 'StopUnit':
          return await this.stopUnit(connection, call);
        case 'SetUnitProperties':
          return await this.setUnitProperties(connection, call);
        case 'ResetFailedUnit':
          return this.resetFailedUnit(connection, call);
        default:
          throw new FakeBusError(UNKNOWN_METHOD, `Unknown method ${member} or interface ${MANAGER}.`);
      }
    } catch (err) {
      if (err instanceof FakeBusError) connection.replyError(call, err.dbusName, err.message);
      else connection.replyError(call, 'org.freedesktop.DBus.Error.Failed', (err as Error).message);
    }
  }

  private expectSignature(call: DBusMessage, signature: string): void {
    if ((call.signature ?? '') !== signature) {
      throw new FakeBusError(INVALID_ARGS, `Invalid arguments '${call.signature ?? ''}' to call ${MANAGER}.${call.member}(), expecting '${signature}'.`);
    }
  }

  private loaded(name: string): FakeSystemdUnit {
    const unit = this.units.get(name);
    if (!unit) throw new FakeBusError(SYSTEMD_NO_SUCH_UNIT, `Unit ${name} not loaded.`);
    return unit;
  }

  private checkMode(mode: string): void {
    if (!JOB_MODES.includes(mode)) throw new FakeBusError(INVALID_ARGS, `Job mode ${mode} invalid`);
  }

  /** Validates a(sv) properties for a slice; returns them as a map. */
  private readProperties(properties: Array<[string, DBusVariant]>, transient: boolean): Map<string, DBusVariant> {
    const result = new Map<string, DBusVariant>();
    for (const [name, variant] of properties) {
      if (name === 'Delegate' && transient) throw new FakeBusError(INVALID_ARGS, 'Delegation not available for unit type');
      const signature = FAKE_SYSTEMD_SLICE_PROPERTIES[name];
      if (!signature || (name === 'Delegate' && !transient)) throw new FakeBusError(PROPERTY_READ_ONLY, `Cannot set property ${name}, or unknown property.`);
      if (variant.signature !== signature) {
        throw new FakeBusError(INVALID_ARGS, `Invalid argument: property ${name} wants a variant of type '${signature}', got '${variant.signature}'`);
      }
      result.set(name, variant);
    }
    return result;
  }

  private async startTransientUnit(connection: DBusConnection, call: DBusMessage): Promise<void> {
    this.expectSignature(call, 'ssa(sv)a(sa(sv))');
    const [name, mode, properties, aux] = call.body as [string, string, Array<[string, DBusVariant]>, DBusValue[]];
    this.checkMode(mode);
    if (!name.endsWith('.slice')) throw new FakeBusError(NOT_SUPPORTED, `the fake systemd1 only makes slice units, not ${name}`);
    try {
      expandSlice(name);
    } catch {
      throw new FakeBusError(INVALID_ARGS, `Invalid unit name or type.`);
    }
    if (name === '-.slice') throw new FakeBusError(SYSTEMD_UNIT_EXISTS, `Unit ${name} already exists.`);
    if (aux.length > 0) throw new FakeBusError(NOT_SUPPORTED, 'the fake systemd1 does not make auxiliary units');
    if (this.units.has(name)) throw new FakeBusError(SYSTEMD_UNIT_EXISTS, `Unit ${name} already exists.`);
    const props = this.readProperties(properties, true);
    const { id, path } = this.newJob();
    await this.runJob(connection, call, id, path, name, async () => {
      await this.startParents(connection, name);
      const result = this.failNext.shift() ?? 'done';
      const unit: FakeSystemdUnit = { name, state: result === 'done' ? 'active' : 'failed', properties: props, implicit: false };
      this.units.set(name, unit);
      if (unit.state === 'active') await this.realize(unit);
      return result;
    });
  }

  private async stopUnit(connection: DBusConnection, call: DBusMessage): Promise<void> {
    this.expectSignature(call, 'ss');
    const [name, mode] = call.body as [string, string];
    this.checkMode(mode);
    const unit = this.loaded(name);
    const { id, path } = this.newJob();
    await this.runJob(connection, call, id, path, name, async () => {
      // Units in a slice require it: they stop first, deepest first, each with its own job.
      const prefix = `${name.slice(0, -'.slice'.length)}-`;
      const children = [...this.units.keys()].filter((n) => n.startsWith(prefix)).sort((a, b) => b.length - a.length || b.localeCompare(a));
      for (const child of children) {
        const job = this.newJob();
        await this.removeUnit(this.units.get(child)!);
        this.emitJobRemoved(connection, job.id, job.path, child, 'done');
      }
      const result = this.failNext.shift() ?? 'done';
      if (result === 'done') await this.removeUnit(unit);
      else unit.state = 'failed';
      return result;
    });
  }

  private async setUnitProperties(connection: DBusConnection, call: DBusMessage): Promise<void> {
    this.expectSignature(call, 'sba(sv)');
    const [name, , properties] = call.body as [string, boolean, Array<[string, DBusVariant]>];
    const unit = this.loaded(name);
    const props = this.readProperties(properties, false);
    for (const [key, value] of props) unit.properties.set(key, value);
    connection.reply(call);
    if (unit.state === 'active') await this.realize(unit);
  }

  private resetFailedUnit(connection: DBusConnection, call: DBusMessage): void {
    this.expectSignature(call, 's');
    const [name] = call.body as [string];
    const unit = this.loaded(name);
    if (unit.state === 'failed') this.units.delete(name);
    connection.reply(call);
  }

  private newJob(): { id: number; path: string } {
    const id = ++this.jobId;
    return { id, path: `${OBJECT_PATH}/job/${id}` };
  }

  /** Replies with the job path, runs the job, then sends its JobRemoved (or the other way round when told to). */
  private async runJob(connection: DBusConnection, call: DBusMessage, id: number, path: string, unit: string, work: () => Promise<string>): Promise<void> {
    if (this.signalBeforeReply) {
      const result = await work();
      this.emitJobRemoved(connection, id, path, unit, result);
      connection.reply(call, 'o', [path]);
      return;
    }
    connection.reply(call, 'o', [path]);
    const result = await work();
    this.emitJobRemoved(connection, id, path, unit, result);
  }

  private emitJobRemoved(connection: DBusConnection, id: number, job: string, unit: string, result: string): void {
    if (this.withholdJobRemoved) return;
    this.jobsRemoved.push({ id, job, unit, result });
    if (!connection.closed) connection.emitSignal(OBJECT_PATH, MANAGER, 'JobRemoved', 'uoss', [id, job, unit, result]);
  }

  /** systemd loads and starts a unit's parent slices on demand ("a-b.slice" pulls in "a.slice"; "-.slice" is the root). */
  private async startParents(connection: DBusConnection, slice: string): Promise<void> {
    const parents: string[] = [];
    for (let p = parentSlice(slice); p !== '-.slice'; p = parentSlice(p)) parents.unshift(p);
    for (const parent of parents) {
      if (this.units.get(parent)?.state === 'active') continue;
      const job = this.newJob();
      const unit: FakeSystemdUnit = { name: parent, state: 'active', properties: new Map(), implicit: true };
      this.units.set(parent, unit);
      await this.realize(unit);
      this.emitJobRemoved(connection, job.id, job.path, parent, 'done');
    }
  }

  private prop(unit: FakeSystemdUnit, name: string): DBusValue | undefined {
    return unit.properties.get(name)?.value;
  }

  private flag(unit: FakeSystemdUnit, name: string): boolean {
    return this.prop(unit, name) === true;
  }

  private u64(unit: FakeSystemdUnit, name: string): bigint | undefined {
    const v = this.prop(unit, name);
    return v === undefined ? undefined : BigInt(v as number | bigint);
  }

  /** Makes the unit's cgroup directories and writes its properties to them, as systemd 252 does on v1 or v2. */
  private async realize(unit: FakeSystemdUnit): Promise<void> {
    try {
      if (this.version === 'v1') await this.realizeV1(unit);
      else await this.realizeV2(unit);
    } catch (err) {
      this.realizeErrors.push({ unit: unit.name, error: err as Error });
    }
  }

  private async mkdirs(root: string, path: string): Promise<string> {
    let dir = root;
    for (const part of path.split('/').filter(Boolean)) {
      dir = `${dir}/${part}`;
      if (await this.fs.exists(dir)) continue;
      try {
        await this.fs.mkdir(dir);
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
    }
    return dir;
  }

  private cpuQuotaUsec(unit: FakeSystemdUnit): { quota?: bigint; period: bigint } {
    const perSec = this.u64(unit, 'CPUQuotaPerSecUSec');
    const period = this.u64(unit, 'CPUQuotaPeriodUSec') ?? DEFAULT_CPU_PERIOD_USEC;
    if (perSec === undefined || perSec === UINT64_MAX) return { period };
    // systemd: quota per period, at least 1 ms.
    const quota = (perSec * period) / 1_000_000n;
    return { quota: quota < 1000n ? 1000n : quota, period };
  }

  private async realizeV1(unit: FakeSystemdUnit): Promise<void> {
    const path = expandSlice(unit.name);
    const cpu = this.flag(unit, 'CPUAccounting') || unit.properties.has('CPUShares') || unit.properties.has('CPUQuotaPerSecUSec');
    const memory = this.flag(unit, 'MemoryAccounting') || unit.properties.has('MemoryLimit');
    const pids = this.flag(unit, 'TasksAccounting') || unit.properties.has('TasksMax');
    for (const controller of this.v1Controllers) {
      const root = `${this.mountRoot}/${controller}`;
      if (!(await this.fs.exists(root))) continue;
      const dir = await this.mkdirs(root, path);
      if (controller === 'cpu' && cpu) {
        const { quota, period } = this.cpuQuotaUsec(unit);
        await this.fs.writeFile(`${dir}/cpu.shares`, `${this.u64(unit, 'CPUShares') ?? 1024n}`);
        await this.fs.writeFile(`${dir}/cpu.cfs_period_us`, `${period}`);
        await this.fs.writeFile(`${dir}/cpu.cfs_quota_us`, quota === undefined ? '-1' : `${quota}`);
      } else if (controller === 'memory' && memory) {
        const limit = this.u64(unit, 'MemoryLimit');
        await this.fs.writeFile(`${dir}/memory.limit_in_bytes`, limit === undefined || limit === UINT64_MAX ? '-1' : `${limit}`);
      } else if (controller === 'pids' && pids) {
        const max = this.u64(unit, 'TasksMax');
        await this.fs.writeFile(`${dir}/pids.max`, max === undefined || max === UINT64_MAX ? 'max' : `${max}`);
      }
    }
  }

  private async realizeV2(unit: FakeSystemdUnit): Promise<void> {
    const path = expandSlice(unit.name);
    const shares = this.u64(unit, 'CPUShares');
    const weight = this.u64(unit, 'CPUWeight') ?? (shares === undefined ? undefined : clampWeight((shares * 100n) / 1024n));
    const memoryMax = this.u64(unit, 'MemoryMax') ?? this.u64(unit, 'MemoryLimit');
    const controllers: string[] = [];
    if (weight !== undefined || unit.properties.has('CPUQuotaPerSecUSec')) controllers.push('cpu');
    if (this.flag(unit, 'IOAccounting')) controllers.push('io');
    if (this.flag(unit, 'MemoryAccounting') || memoryMax !== undefined) controllers.push('memory');
    if (this.flag(unit, 'TasksAccounting') || unit.properties.has('TasksMax')) controllers.push('pids');
    // The controllers are enabled from the root down to the unit's parent, then the unit's directory is made.
    const parts = path.split('/').filter(Boolean);
    let dir = this.mountRoot;
    for (const part of parts) {
      if (controllers.length > 0) await this.fs.writeFile(`${dir}/cgroup.subtree_control`, controllers.map((c) => `+${c}`).join(' '));
      dir = `${dir}/${part}`;
      if (!(await this.fs.exists(dir))) {
        try {
          await this.fs.mkdir(dir);
        } catch (err) {
          if (!isErrno(err, 'EEXIST')) throw err;
        }
      }
    }
    if (controllers.includes('cpu')) {
      const { quota, period } = this.cpuQuotaUsec(unit);
      await this.fs.writeFile(`${dir}/cpu.weight`, `${weight ?? 100n}`);
      await this.fs.writeFile(`${dir}/cpu.max`, `${quota === undefined ? 'max' : quota} ${period}`);
    }
    if (controllers.includes('memory')) await this.fs.writeFile(`${dir}/memory.max`, memoryMax === undefined || memoryMax === UINT64_MAX ? 'max' : `${memoryMax}`);
    if (controllers.includes('pids')) {
      const max = this.u64(unit, 'TasksMax');
      await this.fs.writeFile(`${dir}/pids.max`, max === undefined || max === UINT64_MAX ? 'max' : `${max}`);
    }
  }

  /** Stops a unit: its cgroup trees are removed bottom-up (systemd's cg_trim), and the unit is collected. */
  private async removeUnit(unit: FakeSystemdUnit): Promise<void> {
    unit.state = 'inactive';
    this.units.delete(unit.name);
    for (const dir of this.cgroupPaths(unit.name)) {
      try {
        if (await this.fs.exists(dir)) await this.trim(dir);
      } catch (err) {
        this.realizeErrors.push({ unit: unit.name, error: err as Error });
      }
    }
  }

  private async trim(dir: string): Promise<void> {
    for (const entry of await this.fs.readdir(dir)) {
      const child = `${dir}/${entry}`;
      try {
        await this.fs.readdir(child);
      } catch (err) {
        if (isErrno(err, 'ENOTDIR')) continue; // an interface file
        throw err;
      }
      await this.trim(child);
    }
    await this.fs.rmdir(dir);
  }
}

function clampWeight(w: bigint): bigint {
  return w < 1n ? 1n : w > 10000n ? 10000n : w;
}
