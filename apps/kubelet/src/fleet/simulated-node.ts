// What a fleet node has instead of a machine: its capacity and machine facts from the fleet spec, its node-level
// usage from its simulated runtime, mounts kept in memory, and probes answered by the runtime.
import { createHash } from 'node:crypto';
import type { CgroupMemory, CgroupReader } from '@kubelet-ts/stats';
import type { MachineInfo, MachineInfoProvider } from '@kubelet-ts/node-status';
import type { Mounter } from '@kubelet-ts/volume-manager';
import type { ProbeResponse, ProbeType } from '@kubelet-ts/prober';
import { parseContainerID } from '@kubelet-ts/core';
import type { NodeCapacity } from '../node-capacity.js';
import type { FleetNodeSpec } from './fleet-spec.js';

/** The part of the simulated runtime a fleet node reads (local-runtime's LocalRuntime in simulated mode). */
export interface SimulatedRuntimeView {
  simulatedUsage(): { cpuUsageCoreNanoSeconds: number; cpuNanoCores: number; memoryWorkingSetBytes: number };
  simulatedProbeResult(containerId: string, type: ProbeType): 'success' | 'failure';
}

/** A stable id per node name, as machine-id and system UUID are per machine. */
function nodeId(name: string, salt: string): string {
  return createHash('sha256').update(`${salt}:${name}`).digest('hex').slice(0, 32);
}

/** The node's machine facts: the host's kernel, OS and filesystem, with the node's own CPUs, memory and ids. */
export function simulatedMachineInfo(node: FleetNodeSpec, host: MachineInfoProvider): MachineInfoProvider {
  let info: Promise<MachineInfo> | undefined;
  return () => {
    info ??= host().then((hostInfo) => {
      const id = nodeId(node.name, 'machine');
      return {
        ...hostInfo,
        numCores: node.group.milliCpu / 1000,
        memoryCapacity: node.group.memoryBytes,
        machineID: id,
        systemUUID: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`,
      };
    });
    return info;
  };
}

export function simulatedNodeCapacity(node: FleetNodeSpec, host: NodeCapacity): NodeCapacity {
  return { milliCpu: node.group.milliCpu, memoryBytes: node.group.memoryBytes, pids: host.pids };
}

/**
 * The node's root cgroup is what its simulated containers use (so /stats/summary's node figures and the eviction
 * manager's memory.available follow them); there are no other cgroups.
 */
export class SimulatedCgroupReader implements CgroupReader {
  constructor(
    private readonly runtime: Pick<SimulatedRuntimeView, 'simulatedUsage'>,
    private readonly createdAtMs: number,
  ) {}

  async version(): Promise<1 | 2> {
    return 2;
  }

  async readCpuUsageNanos(cgroup: string): Promise<number> {
    this.check(cgroup);
    return this.runtime.simulatedUsage().cpuUsageCoreNanoSeconds;
  }

  async readMemory(cgroup: string): Promise<CgroupMemory> {
    this.check(cgroup);
    const bytes = this.runtime.simulatedUsage().memoryWorkingSetBytes;
    return { usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes, pageFaults: 0, majorPageFaults: 0 };
  }

  async creationTimeMs(cgroup: string): Promise<number> {
    this.check(cgroup);
    return this.createdAtMs;
  }

  private check(cgroup: string): void {
    if (cgroup !== '/') throw new Error(`a simulated node has no cgroup ${JSON.stringify(cgroup)}, only its root "/"`);
  }
}

/** Mounts of a simulated node: recorded, never made (a fleet of nodes must not mount tmpfs per secret volume). */
export class SimulatedMounter implements Mounter {
  private readonly mounts = new Set<string>();

  async mountTmpfs(target: string): Promise<void> {
    this.mounts.add(target);
  }

  async bindMount(_source: string, target: string): Promise<void> {
    this.mounts.add(target);
  }

  async unmount(target: string): Promise<void> {
    this.mounts.delete(target);
  }

  async isMountPoint(target: string): Promise<boolean> {
    return this.mounts.has(target);
  }

  async mountPointsUnder(prefix: string): Promise<string[]> {
    const base = prefix.endsWith('/') ? prefix : `${prefix}/`;
    return [...this.mounts].filter((m) => m === prefix || m.startsWith(base)).sort((a, b) => b.length - a.length);
  }
}

/** Prober's `simulate`: the runtime says how the container's probe of that type goes (its pod's annotations). */
export function simulatedProbe(runtime: Pick<SimulatedRuntimeView, 'simulatedProbeResult'>) {
  return (type: ProbeType, _pod: unknown, _container: unknown, containerId: string): ProbeResponse => {
    const result = runtime.simulatedProbeResult(parseContainerID(containerId).id, type);
    return result === 'success' ? { result, output: '' } : { result, output: `simulated ${type} probe failure` };
  };
}
