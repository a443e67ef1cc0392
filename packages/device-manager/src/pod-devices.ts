// podDevices (Go: pkg/kubelet/cm/devicemanager/pod_devices.go): which devices each container of each pod was
// given per resource, with the plugin's AllocateResponse for them.
import type { PodDevicesEntry } from './checkpoint.js';
import { marshalContainerAllocateResponse, unmarshalContainerAllocateResponse, type ContainerAllocateResponse, type ContainerDevices } from './proto.js';

export interface DeviceAllocation {
  deviceIds: Set<string>;
  allocResp: ContainerAllocateResponse;
}

/**
 * What a container gets from its devices (Go: DeviceRunContainerOptions), in the shape the runtime manager's
 * `deviceRunContainerOptionsFor` option takes.
 */
export interface DeviceRunContainerOptions {
  envs: Array<{ name: string; value: string }>;
  mounts: Array<{ containerPath: string; hostPath: string; readOnly: boolean }>;
  devices: Array<{ pathOnHost: string; pathInContainer: string; permissions: string }>;
  annotations: Array<{ name: string; value: string }>;
}

export class PodDevices {
  /** pod uid -> container name -> resource name -> allocation. */
  private readonly devs = new Map<string, Map<string, Map<string, DeviceAllocation>>>();

  pods(): Set<string> {
    return new Set(this.devs.keys());
  }

  size(): number {
    return this.devs.size;
  }

  insert(podUID: string, contName: string, resource: string, deviceIds: Iterable<string>, allocResp: ContainerAllocateResponse): void {
    let containers = this.devs.get(podUID);
    if (!containers) this.devs.set(podUID, (containers = new Map()));
    let resources = containers.get(contName);
    if (!resources) containers.set(contName, (resources = new Map()));
    resources.set(resource, { deviceIds: new Set(deviceIds), allocResp });
  }

  delete(podUIDs: Iterable<string>): void {
    for (const uid of podUIDs) this.devs.delete(uid);
  }

  /** podDevices.containerDevices: the device ids of one resource of one container, undefined when none. */
  containerDevices(podUID: string, contName: string, resource: string): Set<string> | undefined {
    return this.devs.get(podUID)?.get(contName)?.get(resource)?.deviceIds;
  }

  /** podDevices.podDevices: the union of a pod's devices of a resource. */
  podDevices(podUID: string, resource: string): Set<string> {
    const out = new Set<string>();
    for (const resources of this.devs.get(podUID)?.values() ?? []) for (const id of resources.get(resource)?.deviceIds ?? []) out.add(id);
    return out;
  }

  /** addContainerAllocatedResources: an init container's devices become reusable by the pod's next containers. */
  addContainerAllocatedResources(podUID: string, contName: string, allocated: Map<string, Set<string>>): void {
    for (const [resource, alloc] of this.devs.get(podUID)?.get(contName) ?? []) {
      let set = allocated.get(resource);
      if (!set) allocated.set(resource, (set = new Set()));
      for (const id of alloc.deviceIds) set.add(id);
    }
  }

  /** removeContainerAllocatedResources: an app container's devices are not reusable by the others. */
  removeContainerAllocatedResources(podUID: string, contName: string, allocated: Map<string, Set<string>>): void {
    for (const [resource, alloc] of this.devs.get(podUID)?.get(contName) ?? []) {
      for (const id of alloc.deviceIds) allocated.get(resource)?.delete(id);
    }
  }

  /** podDevices.devices: every allocated device per resource. */
  devices(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const containers of this.devs.values()) {
      for (const resources of containers.values()) {
        for (const [resource, alloc] of resources) {
          let set = out.get(resource);
          if (!set) out.set(resource, (set = new Set()));
          for (const id of alloc.deviceIds) set.add(id);
        }
      }
    }
    return out;
  }

  /** toCheckpointData. */
  toCheckpointData(): PodDevicesEntry[] {
    const entries: PodDevicesEntry[] = [];
    for (const [podUID, containers] of this.devs) {
      for (const [contName, resources] of containers) {
        for (const [resource, alloc] of resources) {
          entries.push({
            PodUID: podUID,
            ContainerName: contName,
            ResourceName: resource,
            DeviceIDs: [...alloc.deviceIds].sort(),
            AllocResp: marshalContainerAllocateResponse(alloc.allocResp).toString('base64'),
          });
        }
      }
    }
    return entries;
  }

  /** fromCheckpointData; an entry whose AllocResp does not decode is skipped, as Go. */
  fromCheckpointData(entries: readonly PodDevicesEntry[], onError?: (entry: PodDevicesEntry, err: unknown) => void): void {
    for (const e of entries) {
      let resp: ContainerAllocateResponse;
      try {
        resp = unmarshalContainerAllocateResponse(Buffer.from(e.AllocResp, 'base64'));
      } catch (err) {
        onError?.(e, err);
        continue;
      }
      this.insert(e.PodUID, e.ContainerName, e.ResourceName, e.DeviceIDs, resp);
    }
  }

  /** getContainerDevices: the pod resources API's view of one container's devices. */
  getContainerDevices(podUID: string, contName: string): ContainerDevices[] {
    const out: ContainerDevices[] = [];
    for (const [resource, alloc] of this.devs.get(podUID)?.get(contName) ?? []) {
      out.push({ resourceName: resource, deviceIds: [...alloc.deviceIds].sort() });
    }
    return out;
  }

  /**
   * deviceRunContainerOptions: the envs, mounts, devices and annotations of every resource of a container, the
   * first setting of an env, container path or annotation winning, as in Go. undefined when it has no devices.
   */
  deviceRunContainerOptions(podUID: string, contName: string, onConflict?: (what: string, key: string, a: string, b: string) => void): DeviceRunContainerOptions | undefined {
    const resources = this.devs.get(podUID)?.get(contName);
    if (!resources) return undefined;
    const opts: DeviceRunContainerOptions = { envs: [], mounts: [], devices: [], annotations: [] };
    const envs = new Map<string, string>();
    const devs = new Map<string, string>();
    const mounts = new Map<string, string>();
    const annotations = new Map<string, string>();
    for (const { allocResp: resp } of resources.values()) {
      for (const [k, v] of Object.entries(resp.envs ?? {})) {
        const e = envs.get(k);
        if (e !== undefined) {
          if (e !== v) onConflict?.('Environment variable', k, e, v);
          continue;
        }
        envs.set(k, v);
        opts.envs.push({ name: k, value: v });
      }
      for (const dev of resp.devices ?? []) {
        const d = devs.get(dev.containerPath);
        if (d !== undefined) {
          if (d !== dev.hostPath) onConflict?.('Container device', dev.containerPath, d, dev.hostPath);
          continue;
        }
        devs.set(dev.containerPath, dev.hostPath);
        opts.devices.push({ pathOnHost: dev.hostPath, pathInContainer: dev.containerPath, permissions: dev.permissions });
      }
      for (const m of resp.mounts ?? []) {
        const existing = mounts.get(m.containerPath);
        if (existing !== undefined) {
          if (existing !== m.hostPath) onConflict?.('Container mount', m.containerPath, existing, m.hostPath);
          continue;
        }
        mounts.set(m.containerPath, m.hostPath);
        opts.mounts.push({ containerPath: m.containerPath, hostPath: m.hostPath, readOnly: m.readOnly });
      }
      for (const [k, v] of Object.entries(resp.annotations ?? {})) {
        const a = annotations.get(k);
        if (a !== undefined) {
          if (a !== v) onConflict?.('Annotation', k, a, v);
          continue;
        }
        annotations.set(k, v);
        opts.annotations.push({ name: k, value: v });
      }
    }
    return opts;
  }
}
