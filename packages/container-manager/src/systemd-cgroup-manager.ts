// Go: pkg/kubelet/cm/cgroup_manager_linux.go (cgroupManagerImpl) for the systemd driver, with libcontainer's
// systemd cgroup managers of runc v1.0.0-rc92 (cgroups/systemd v1.go legacyManager, v2.go unifiedManager,
// common.go startUnit/stopUnit): every cgroup is a transient slice unit of systemd's; the file writes below it
// are the cgroupfs driver's on the expanded slice path.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defaultLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { CgroupfsManager, cpuSharesToWeight, DEFAULT_CGROUP_MOUNT_ROOT } from './cgroup-manager.js';
import { formatCgroupName } from './cgroup-names.js';
import { parseSystemdToCgroupName, systemdCgroupPath, systemdUnitInfo, toSystemdName } from './systemd-names.js';
import { SYSTEMD_NO_SUCH_UNIT, SYSTEMD_UNIT_EXISTS, SystemdError, type SystemdUnitManager, type UnitProperty } from './systemd-units.js';
import type { CgroupFs, CgroupManager, CgroupName, CgroupVersion, MemoryEvents, PressureStats, ResourceConfig } from './types.js';

/** systemd's USEC_INFINITY (and what uint64(-1) is in Go): no limit. */
export const SYSTEMD_INFINITY = 2n ** 64n - 1n;
/** The default CFS period libcontainer assumes when none is given (µs). */
const DEFAULT_CPU_PERIOD_US = 100_000;

/** Go's uint64(x) of an int64: negative values wrap (-1 -> max uint64). */
function uint64(value: number): bigint {
  return BigInt.asUintN(64, BigInt(Math.trunc(value)));
}

function prop(name: string, signature: string, value: UnitProperty['value']): UnitProperty {
  return { name, signature, value };
}

/**
 * libcontainer's CPUQuotaPerSecUSec: set when quota and period are both non-zero; USEC_INFINITY for a quota <= 0,
 * else quota*1e6/period rounded up to whole 10 ms (systemd keeps CPUQuota as a whole percentage).
 */
export function cpuQuotaPerSecUSec(quota: number, period: number): bigint {
  if (quota <= 0) return SYSTEMD_INFINITY;
  let perSec = (BigInt(Math.trunc(quota)) * 1_000_000n) / BigInt(Math.trunc(period || DEFAULT_CPU_PERIOD_US));
  if (perSec % 10_000n !== 0n) perSec = (perSec / 10_000n + 1n) * 10_000n;
  return perSec;
}

/**
 * The resource properties of a unit, in libcontainer's order. v1 (genV1ResourcesProperties): the device policy
 * for Go's allow-all rule (DevicePolicy=auto with an empty DeviceAllow), MemoryLimit, CPUShares,
 * CPUQuotaPerSecUSec, TasksAccounting+TasksMax (pids limit > 0 or -1). v2 (genV2ResourcesProperties): MemoryMax,
 * CPUWeight (Go's getCpuWeight of the shares), CPUQuotaPerSecUSec, TasksAccounting+TasksMax (pids limit > 0).
 */
export function systemdResourceProperties(version: CgroupVersion, r: ResourceConfig): UnitProperty[] {
  const props: UnitProperty[] = [];
  const quota = r.cpuQuota ?? 0;
  const period = r.cpuPeriod ?? 0;
  const pids = r.pidsLimit ?? 0;
  if (version === 'v1') {
    props.push(prop('DevicePolicy', 's', 'auto'), prop('DeviceAllow', 'a(ss)', []));
    if (r.memoryLimitBytes) props.push(prop('MemoryLimit', 't', uint64(r.memoryLimitBytes)));
    if (r.cpuShares) props.push(prop('CPUShares', 't', uint64(r.cpuShares)));
    if (quota !== 0 && period !== 0) props.push(prop('CPUQuotaPerSecUSec', 't', cpuQuotaPerSecUSec(quota, period)));
    if (pids > 0 || pids === -1) props.push(prop('TasksAccounting', 'b', true), prop('TasksMax', 't', uint64(pids)));
    return props;
  }
  if (r.memoryLimitBytes) props.push(prop('MemoryMax', 't', uint64(r.memoryLimitBytes)));
  if (r.cpuShares) props.push(prop('CPUWeight', 't', BigInt(cpuSharesToWeight(r.cpuShares))));
  if (quota !== 0 && period !== 0) props.push(prop('CPUQuotaPerSecUSec', 't', cpuQuotaPerSecUSec(quota, period)));
  if (pids > 0) props.push(prop('TasksAccounting', 'b', true), prop('TasksMax', 't', uint64(pids)));
  return props;
}

/**
 * The properties libcontainer's Apply(-1) starts a slice with: Description, Wants=<parent slice> (a slice's
 * parent is a Wants=, not Slice=), the accounting switches (BlockIOAccounting on v1, IOAccounting on v2),
 * DefaultDependencies=no, then the resource properties. No PIDs (-1 joins no process), no Delegate (slices).
 */
export function systemdSliceProperties(version: CgroupVersion, unit: string, parent: string, r: ResourceConfig): UnitProperty[] {
  return [
    prop('Description', 's', `libcontainer container ${unit}`),
    prop('Wants', 'as', [parent]),
    prop('MemoryAccounting', 'b', true),
    prop('CPUAccounting', 'b', true),
    prop(version === 'v1' ? 'BlockIOAccounting' : 'IOAccounting', 'b', true),
    prop('DefaultDependencies', 'b', false),
    ...systemdResourceProperties(version, r),
  ];
}

export interface SystemdCgroupManagerOptions {
  version: CgroupVersion;
  /** systemd's org.freedesktop.systemd1.Manager (SystemdDbusUnitManager on the system bus). */
  units: SystemdUnitManager;
  /** Where the hierarchies are mounted. Default /sys/fs/cgroup. */
  mountRoot?: string;
  fs?: CgroupFs;
  logger?: Logger;
  clock?: Clock;
}

function errorMessage(err: unknown): string {
  if (err instanceof SystemdError) return `${err.dbusName}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The systemd driver's CgroupManager. Names are systemd slices ("/kubepods.slice/kubepods-burstable.slice/...");
 * create() starts a transient slice unit, update() sets the unit's properties and writes the cgroup files,
 * destroy() stops the unit and removes what is left. Reads (exists, pids, memory, children) are the cgroupfs
 * driver's on the expanded slice path.
 */
export class SystemdCgroupManager implements CgroupManager {
  readonly version: CgroupVersion;
  private readonly units: SystemdUnitManager;
  private readonly fsManager: CgroupfsManager;
  private readonly logger: Logger;

  constructor(opts: SystemdCgroupManagerOptions) {
    this.version = opts.version;
    this.units = opts.units;
    this.logger = opts.logger ?? defaultLogger;
    this.fsManager = new CgroupfsManager({
      version: opts.version,
      mountRoot: opts.mountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT,
      fs: opts.fs,
      logger: this.logger,
      clock: opts.clock ?? realClock,
    });
  }

  /** Go: Name: ToSystemd, always an expanded cgroupfs path. This is the cgroupParent the runtime gets. */
  name(name: CgroupName): string {
    return toSystemdName(name);
  }

  /** Go: CgroupName: ParseSystemdToCgroupName. */
  cgroupName(literal: string): CgroupName {
    return parseSystemdToCgroupName(literal);
  }

  /** The cgroupfs components below each hierarchy's mount. */
  private fsName(name: CgroupName): CgroupName {
    return systemdCgroupPath(name);
  }

  private unit(name: CgroupName): { parent: string; name: string } {
    const info = systemdUnitInfo(name);
    if (info.name === '') throw new Error('the root cgroup is not a systemd unit of its own (it is "-.slice", owned by systemd)');
    return info;
  }

  exists(name: CgroupName): Promise<boolean> {
    return this.fsManager.exists(this.fsName(name));
  }

  /**
   * Go: Create: libcontainer Apply(-1) — StartTransientUnit of the slice with its properties (a unit that already
   * exists is fine, as rc92's startUnit has it), then the cgroup directories in every hierarchy (joinCgroups,
   * v2 CreateCgroupPath) — then Update, whose failure is only logged.
   */
  async create(name: CgroupName, resources: ResourceConfig = {}): Promise<void> {
    const unit = this.unit(name);
    await this.startUnit(unit.name, systemdSliceProperties(this.version, unit.name, unit.parent, resources));
    await this.fsManager.create(this.fsName(name));
    try {
      await this.update(name, resources);
    } catch (err) {
      this.logger.error('cgroup update failed', err, { cgroupName: formatCgroupName(name) });
    }
  }

  /** libcontainer startUnit: UnitExists is success; a failed job resets the failed unit and is an error. */
  private async startUnit(unit: string, properties: UnitProperty[]): Promise<void> {
    try {
      await this.units.startTransientUnit(unit, properties);
    } catch (err) {
      if (err instanceof SystemdError) {
        if (err.dbusName === SYSTEMD_UNIT_EXISTS) {
          this.logger.v(4).info('systemd unit already exists', { unit });
          return;
        }
        throw new Error(`error creating systemd unit \`${unit}\`: ${errorMessage(err)}`, { cause: err });
      }
      // The job ran and did not end "done" (or its wait failed): rc92 resets the failed unit before returning.
      try {
        await this.units.resetFailedUnit(unit);
      } catch (resetErr) {
        this.logger.v(4).info('ResetFailedUnit failed', { unit, err: errorMessage(resetErr) });
      }
      throw err;
    }
  }

  /**
   * SetUnitProperties(unit, runtime=true, the resource properties) so systemd keeps the limits (it rewrites a
   * unit's cgroup files from its properties), then the cgroup files themselves, as the cgroupfs driver writes them.
   */
  async update(name: CgroupName, resources: ResourceConfig): Promise<void> {
    const unit = this.unit(name);
    try {
      await this.units.setUnitProperties(unit.name, true, systemdResourceProperties(this.version, resources));
    } catch (err) {
      throw new Error(`failed to set properties of systemd unit ${JSON.stringify(unit.name)} for cgroup ${formatCgroupName(name)}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    try {
      await this.fsManager.update(this.fsName(name), resources);
    } catch (err) {
      // Go's v2 error names the CgroupName ("[kubepods burstable pod<uid>]"), not the slice directories.
      const fsPrefix = `failed to set resources for cgroup ${formatCgroupName(this.fsName(name))}: `;
      const message = err instanceof Error ? err.message : String(err);
      if (!message.startsWith(fsPrefix)) throw err;
      throw new Error(`failed to set resources for cgroup ${formatCgroupName(name)}: ${message.slice(fsPrefix.length)}`, { cause: err });
    }
  }

  /**
   * Go: Destroy: StopUnit (libcontainer's stopUnit never fails the destroy: a unit already gone, or a stop job that
   * did not end "done", is only logged), then the cgroup directories left behind are removed (RemovePaths).
   */
  async destroy(name: CgroupName): Promise<void> {
    const unit = this.unit(name);
    try {
      await this.units.stopUnit(unit.name);
    } catch (err) {
      if (err instanceof SystemdError && err.dbusName === SYSTEMD_NO_SUCH_UNIT) {
        this.logger.v(4).info('systemd unit already gone', { unit: unit.name });
      } else {
        // The D-Bus client's errors already name the unit (`error removing unit \`x\`: got \`failed\``); a D-Bus error does not.
        const message = errorMessage(err);
        this.logger.warn(`${message.includes(unit.name) ? message : `error removing unit \`${unit.name}\`: ${message}`}. Continuing...`);
      }
    }
    try {
      await this.fsManager.destroy(this.fsName(name));
    } catch (err) {
      throw new Error(`unable to destroy cgroup paths for cgroup ${formatCgroupName(name)} : ${causeMessage(err)}`, { cause: err });
    }
  }

  pids(name: CgroupName): Promise<number[]> {
    return this.fsManager.pids(this.fsName(name));
  }

  memoryUsageBytes(name: CgroupName): Promise<number> {
    return this.fsManager.memoryUsageBytes(this.fsName(name));
  }

  listChildren(name: CgroupName): Promise<string[]> {
    return this.fsManager.listChildren(this.fsName(name));
  }

  killAllProcesses(name: CgroupName): Promise<boolean> {
    return this.fsManager.killAllProcesses(this.fsName(name));
  }

  /** The OOM counters of the slice's directory or of a `child` below it (e.g. `cri-containerd-<id>.scope`). */
  memoryEvents(name: CgroupName, child?: string): Promise<MemoryEvents | undefined> {
    return this.fsManager.memoryEvents(this.fsName(name), child);
  }

  /** The PSI files of the slice's directory or of a `child` below it (v2 only). */
  pressure(name: CgroupName, child?: string): Promise<PressureStats | undefined> {
    return this.fsManager.pressure(this.fsName(name), child);
  }
}

/** The cgroupfs manager's destroy error names the slice path; the detail after its prefix is what Go reports. */
function causeMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const marker = message.indexOf(' : ');
  return message.startsWith('unable to destroy cgroup paths for cgroup ') && marker >= 0 ? message.slice(marker + 3) : message;
}

export interface CreateSystemdCgroupManagerOptions {
  units: SystemdUnitManager;
  /** Default /sys/fs/cgroup. */
  mountRoot?: string;
  /** Default: v2 when <mountRoot>/cgroup.controllers exists (checked synchronously). */
  version?: CgroupVersion;
  fs?: CgroupFs;
  logger?: Logger;
  clock?: Clock;
}

/** A SystemdCgroupManager on the host's cgroup mount, its version detected synchronously when not given. */
export function createSystemdCgroupManagerSync(opts: CreateSystemdCgroupManagerOptions): SystemdCgroupManager {
  const mountRoot = opts.mountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT;
  const version: CgroupVersion = opts.version ?? (existsSync(join(mountRoot, 'cgroup.controllers')) ? 'v2' : 'v1');
  return new SystemdCgroupManager({ ...opts, version, mountRoot });
}
