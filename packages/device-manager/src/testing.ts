// Test doubles: a fake device manager for the kubelet's tests, and the in-process device plugin
// (DevicePluginServer, re-exported) for tests that need a real plugin over gRPC.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { DeviceAdmitResult, DeviceManagerLike, DevicePluginResourceCapacity } from './manager.js';
import type { DeviceRunContainerOptions } from './pod-devices.js';
import type { ContainerDevices } from './proto.js';

export { DevicePluginServer, type DevicePluginServerOptions } from './device-plugin-server.js';

/**
 * A device manager without plugins: `devices` says how many devices each resource has; admission hands them out
 * in order (refusing as Go when too few are free); each container's options come from `runContainerOptions`.
 */
export class FakeDeviceManager implements DeviceManagerLike {
  started = false;
  readonly allocations = new Map<string, Map<string, ContainerDevices[]>>();
  private activePods: () => V1Pod[] = () => [];

  constructor(
    readonly devices: Record<string, number> = {},
    readonly runContainerOptions: (pod: V1Pod, container: V1Container) => DeviceRunContainerOptions | undefined = () => undefined,
  ) {}

  async start(activePods: () => V1Pod[]): Promise<void> {
    this.started = true;
    this.activePods = activePods;
  }

  async stop(): Promise<void> {
    this.started = false;
  }

  private inUse(resource: string): Set<string> {
    const out = new Set<string>();
    for (const containers of this.allocations.values()) for (const devs of containers.values()) for (const d of devs) if (d.resourceName === resource) for (const id of d.deviceIds) out.add(id);
    return out;
  }

  async admit(attrs: { pod: V1Pod }): Promise<DeviceAdmitResult> {
    this.updateAllocatedDevices();
    const uid = attrs.pod.metadata?.uid ?? '';
    for (const c of [...(attrs.pod.spec?.initContainers ?? []), ...(attrs.pod.spec?.containers ?? [])]) {
      const got: ContainerDevices[] = [];
      for (const [resource, q] of Object.entries(c.resources?.limits ?? {})) {
        const total = this.devices[resource];
        if (total === undefined) continue;
        const needed = Number.parseInt(String(q), 10);
        const used = this.inUse(resource);
        const free = Array.from({ length: total }, (_, i) => `${resource}-${i}`).filter((id) => !used.has(id));
        if (free.length < needed) {
          return {
            admit: false,
            reason: 'UnexpectedAdmissionError',
            message: `Allocate failed due to requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${free.length}, which is unexpected`,
          };
        }
        got.push({ resourceName: resource, deviceIds: free.slice(0, needed) });
      }
      if (got.length > 0) {
        let containers = this.allocations.get(uid);
        if (!containers) this.allocations.set(uid, (containers = new Map()));
        containers.set(c.name, got);
      }
    }
    return { admit: true };
  }

  async getDeviceRunContainerOptions(pod: V1Pod, container: V1Container): Promise<DeviceRunContainerOptions | undefined> {
    return this.runContainerOptions(pod, container);
  }

  getCapacity(): DevicePluginResourceCapacity {
    return { capacity: { ...this.devices }, allocatable: { ...this.devices }, removed: [] };
  }

  updateAllocatedDevices(): void {
    const active = new Set(this.activePods().map((p) => p.metadata?.uid ?? ''));
    for (const uid of [...this.allocations.keys()]) if (!active.has(uid)) this.allocations.delete(uid);
  }

  allocatedDeviceCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const resource of Object.keys(this.devices)) out[resource] = this.inUse(resource).size;
    return out;
  }

  getDevices(podUID: string, containerName: string): ContainerDevices[] {
    return this.allocations.get(podUID)?.get(containerName) ?? [];
  }

  getAllocatableDevices(): ContainerDevices[] {
    return Object.entries(this.devices).flatMap(([resource, n]) => Array.from({ length: n }, (_, i) => ({ resourceName: resource, deviceIds: [`${resource}-${i}`] })));
  }

  shouldResetExtendedResourceCapacity(): boolean {
    return false;
  }
}
