// Go: NewCgroupManager: the cgroup manager for a driver, on cgroup v1 or v2.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock, Logger } from '@kubelet-ts/core';
import { nodeCgroupFs } from './cgroup-fs.js';
import { CgroupfsManager, DEFAULT_CGROUP_MOUNT_ROOT, detectCgroupVersion } from './cgroup-manager.js';
import { SystemdCgroupManager } from './systemd-cgroup-manager.js';
import { SYSTEMD_MANAGER_UNAVAILABLE, type SystemdUnitManager } from './systemd-units.js';
import type { CgroupDriver, CgroupFs, CgroupManager, CgroupVersion } from './types.js';

export interface CreateCgroupManagerOptions {
  driver: CgroupDriver;
  /** Default /sys/fs/cgroup. */
  mountRoot?: string;
  /** Default: detected (v2 when <mountRoot>/cgroup.controllers exists). */
  version?: CgroupVersion;
  fs?: CgroupFs;
  /** The systemd driver's connection to systemd (e.g. SystemdDbusUnitManager); required for 'systemd'. */
  systemdUnits?: SystemdUnitManager;
  logger?: Logger;
  clock?: Clock;
}

function checkDriver(opts: { driver: CgroupDriver; systemdUnits?: SystemdUnitManager }): void {
  if (opts.driver !== 'cgroupfs' && opts.driver !== 'systemd') {
    throw new Error(`invalid cgroup driver ${JSON.stringify(opts.driver)}, valid drivers are "cgroupfs" and "systemd"`);
  }
  if (opts.driver === 'systemd' && !opts.systemdUnits) throw new Error(SYSTEMD_MANAGER_UNAVAILABLE);
}

function build(opts: CreateCgroupManagerOptions, version: CgroupVersion, fs: CgroupFs, mountRoot: string): CgroupManager {
  if (opts.driver === 'systemd') return new SystemdCgroupManager({ ...opts, units: opts.systemdUnits!, version, fs, mountRoot });
  return new CgroupfsManager({ ...opts, version, fs, mountRoot });
}

/** Go: NewCgroupManager. The systemd driver needs `systemdUnits`. */
export async function createCgroupManager(opts: CreateCgroupManagerOptions): Promise<CgroupManager> {
  checkDriver(opts);
  const fs = opts.fs ?? nodeCgroupFs;
  const mountRoot = opts.mountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT;
  return build(opts, opts.version ?? (await detectCgroupVersion(fs, mountRoot)), fs, mountRoot);
}

/** createCgroupManager for the real filesystem without awaiting: the version is detected synchronously. */
export function createCgroupManagerSync(opts: Omit<CreateCgroupManagerOptions, 'fs' | 'version'>): CgroupManager {
  checkDriver(opts);
  const mountRoot = opts.mountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT;
  const version: CgroupVersion = existsSync(join(mountRoot, 'cgroup.controllers')) ? 'v2' : 'v1';
  return build(opts, version, nodeCgroupFs, mountRoot);
}
