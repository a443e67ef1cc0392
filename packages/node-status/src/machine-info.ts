// What cadvisor's MachineInfo/VersionInfo give the kubelet's node status, read from the host.
import { readFile, statfs } from 'node:fs/promises';
import * as os from 'node:os';
import { parseMeminfo } from '@kubelet-ts/core';

/** The host facts the node status reports (Go: cadvisorapi.MachineInfo + VersionInfo + rootfs capacity). */
export interface MachineInfo {
  /** Logical CPUs. */
  numCores: number;
  /** Bytes, MemTotal of /proc/meminfo. */
  memoryCapacity: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  /** uname -r. */
  kernelVersion: string;
  /** PRETTY_NAME of /etc/os-release. */
  osImage: string;
  /** Bytes of the filesystem holding the kubelet's root dir; undefined when it could not be read. */
  rootfsCapacity?: number;
  /** Inodes of that filesystem. */
  rootfsInodes?: number;
}

export type MachineInfoProvider = () => Promise<MachineInfo>;

async function readTrimmed(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** PRETTY_NAME from /etc/os-release text; "Linux" when absent, as cadvisor. */
export function parseOsRelease(text: string | undefined): string {
  const m = text ? /^PRETTY_NAME=(.*)$/m.exec(text) : null;
  if (!m) return 'Linux';
  return m[1].trim().replace(/^(["'])(.*)\1$/, '$2');
}

/** Reads the machine facts from /proc, /sys, /etc and statfs(rootDir). */
export async function readMachineInfo(rootDir: string): Promise<MachineInfo> {
  const [meminfo, machineID, dbusID, productUUID, bootID, osRelease] = await Promise.all([
    readTrimmed('/proc/meminfo'),
    readTrimmed('/etc/machine-id'),
    readTrimmed('/var/lib/dbus/machine-id'),
    readTrimmed('/sys/class/dmi/id/product_uuid'),
    readTrimmed('/proc/sys/kernel/random/boot_id'),
    readTrimmed('/etc/os-release'),
  ]);
  const info: MachineInfo = {
    numCores: os.cpus().length || os.availableParallelism(),
    memoryCapacity: (meminfo && parseMeminfo(meminfo).get('MemTotal')) || os.totalmem(),
    machineID: machineID || dbusID || '',
    systemUUID: productUUID ?? '',
    bootID: bootID ?? '',
    kernelVersion: os.release(),
    osImage: parseOsRelease(osRelease),
  };
  try {
    const fs = await statfs(rootDir);
    info.rootfsCapacity = fs.bsize * fs.blocks;
    info.rootfsInodes = fs.files;
  } catch {
    // Missing root dir: no ephemeral-storage capacity, and the Ready condition says so.
  }
  return info;
}

/** A provider that reads the host once and then serves the cached result, as the kubelet caches cadvisor's machine info. */
export function cachedMachineInfo(rootDir: string): MachineInfoProvider {
  let cached: Promise<MachineInfo> | undefined;
  return () => {
    cached ??= readMachineInfo(rootDir).catch((err: unknown) => {
      cached = undefined;
      throw err;
    });
    return cached;
  };
}

/** Go's runtime.GOARCH for this process. */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = { x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64', mips: 'mips', mipsel: 'mipsle', loong64: 'loong64' };
  return map[arch] ?? arch;
}

/** Go's runtime.GOOS for this process. */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}

/** nodeutil.GetHostname: the override or os.hostname(), trimmed and lower-cased. */
export function defaultHostname(override?: string): string {
  const name = (override && override.trim()) || os.hostname();
  return name.trim().toLowerCase();
}
