// ManagerImpl (Go v1.20: pkg/kubelet/cm/devicemanager/manager.go): the Registration service device plugins call on
// <root-dir>/device-plugins/kubelet.sock, one endpoint per registered resource streaming its devices, allocation of
// devices to containers at admission, and the checkpoint that keeps allocations across kubelet restarts.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { errorText, defaultLogger, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { CHECKPOINT_FILE_NAME, CorruptCheckpointError, readCheckpointFile, writeCheckpointFile } from './checkpoint.js';
import { EndpointImpl, type Endpoint } from './endpoint.js';
import { PodDevices, type DeviceRunContainerOptions } from './pod-devices.js';
import { DEVICE_PLUGIN_API_VERSION, HEALTHY, KUBELET_SOCKET, SUPPORTED_VERSIONS, loadDevicePluginPackage, type ContainerDevices, type Device, type DevicePluginOptions, type RegisterRequest, grpcJs } from './proto.js';
import { isExtendedResourceName } from './resource-name.js';

/** What an admit handler answers (the kubelet's lifecycle.PodAdmitResult). */
export interface DeviceAdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

/** GetCapacity's answer: device counts per resource, and resources whose plugin is gone for good. */
export interface DevicePluginResourceCapacity {
  /** Every device (healthy and unhealthy) per resource. */
  capacity: Record<string, number>;
  /** Healthy devices per resource. */
  allocatable: Record<string, number>;
  /** Resources removed since the last call (their plugin stopped more than the grace period ago). */
  removed: string[];
}

/** The device manager as the kubelet uses it (Go: devicemanager.Manager). */
export interface DeviceManagerLike {
  start(activePods: () => V1Pod[], sourcesReady?: () => boolean): Promise<void>;
  stop(): Promise<void>;
  /** The resource allocation admit handler's device part (Go: resourceAllocator.Admit). */
  admit(attrs: { pod: V1Pod }): Promise<DeviceAdmitResult>;
  getDeviceRunContainerOptions(pod: V1Pod, container: V1Container): Promise<DeviceRunContainerOptions | undefined>;
  getCapacity(): DevicePluginResourceCapacity;
  updateAllocatedDevices(): void;
  /** How many devices of each resource are allocated (for UpdatePluginResources' sanitizeNodeAllocatable). */
  allocatedDeviceCounts(): Record<string, number>;
  getDevices(podUID: string, containerName: string): ContainerDevices[];
  getAllocatableDevices(): ContainerDevices[];
  shouldResetExtendedResourceCapacity(): boolean;
}

export interface DeviceManagerOptions {
  /** The device plugin directory, `<root-dir>/device-plugins`. */
  socketDir: string;
  clock?: Clock;
  logger?: Logger;
}

interface EndpointInfo {
  e: Endpoint;
  opts?: DevicePluginOptions | null;
}

/**
 * What the kubelet's plugin watcher calls for plugins of type `DevicePlugin` (Go: cache.PluginHandler): the same
 * shape as @kubelet-ts/csi's PluginHandler, declared here so this package does not depend on it.
 */
export interface DevicePluginWatcherHandler {
  /** Refuses a plugin by throwing (Go's ValidatePlugin error texts). */
  validatePlugin(name: string, endpoint: string, versions: string[]): void;
  /** Dials the plugin at `endpoint` (an absolute socket path), asks for its options and runs its endpoint. */
  registerPlugin(name: string, endpoint: string, versions: string[]): Promise<void>;
  /** Stops the plugin's endpoint: its devices turn unhealthy, as when a plugin goes away. */
  deRegisterPlugin(name: string): void;
}

/** The file GetWatcherHandler creates in the device plugin directory: plugins look for it to register through the plugin watcher. */
export const DEPRECATION_FILE_NAME = 'DEPRECATION';

/** errUnsupportedVersion, errInvalidResourceName: Go formats the versions with %q. */
const goQuote = (s: string): string => JSON.stringify(s);

type RegisterCallback = (err: grpc.ServiceError | null, res?: Record<string, never>) => void;

export class DeviceManager implements DeviceManagerLike {
  readonly socketDir: string;
  readonly socketPath: string;
  readonly checkpointPath: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly endpoints = new Map<string, EndpointInfo>();
  /** Healthy and unhealthy device ids per resource (Go: healthyDevices, unhealthyDevices). */
  private readonly healthyDevices = new Map<string, Set<string>>();
  private readonly unhealthyDevices = new Map<string, Set<string>>();
  private readonly allDevices = new Map<string, Map<string, Device>>();
  /** Device ids in use per resource (Go: allocatedDevices). */
  private allocatedDevices = new Map<string, Set<string>>();
  private readonly podDevices = new PodDevices();
  /** Devices an init container had, which the pod's next containers may take (Go: devicesToReuse). */
  private readonly devicesToReuse = new Map<string, Map<string, Set<string>>>();
  private activePods: () => V1Pod[] = () => [];
  private sourcesReady: () => boolean = () => true;
  private server?: grpc.Server;
  private checkpointWrites: Promise<void> = Promise.resolve();
  private readonly running = new Set<Promise<void>>();
  /** Plugin watcher registrations wait for start() (the watcher may start first); stop() fails the waiting ones. */
  private readonly startWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private watcherHandlerRequested = false;
  private stopped = false;

  constructor(opts: DeviceManagerOptions) {
    this.socketDir = opts.socketDir;
    this.socketPath = join(opts.socketDir, KUBELET_SOCKET);
    this.checkpointPath = join(opts.socketDir, CHECKPOINT_FILE_NAME);
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
  }

  /**
   * Start: reads the checkpoint (a corrupt one is reported and ignored), removes everything but it from the
   * socket directory (plugins watch for that and re-register), and serves Registration on kubelet.sock.
   */
  async start(activePods: () => V1Pod[], sourcesReady: () => boolean = () => true): Promise<void> {
    this.logger.v(2).info('Starting Device Plugin manager');
    this.stopped = false;
    this.activePods = activePods;
    this.sourcesReady = sourcesReady;
    try {
      await this.readCheckpoint();
    } catch (err) {
      this.logger.warn('Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date', { err: errorText(err) });
    }
    await mkdir(this.socketDir, { recursive: true, mode: 0o750 });
    try {
      for (const name of await readdir(this.socketDir)) {
        if (name === CHECKPOINT_FILE_NAME) continue;
        // Go creates it after the cleanup (GetWatcherHandler runs after Start); here the handler may come first.
        if (name === DEPRECATION_FILE_NAME && this.watcherHandlerRequested) continue;
        await rm(join(this.socketDir, name), { recursive: true, force: true });
      }
    } catch (err) {
      this.logger.error('Fail to clean up stale contents', err, { dir: this.socketDir });
    }
    const server = new (grpcJs().Server)();
    server.addService(loadDevicePluginPackage().Registration.service, {
      Register: (call: grpc.ServerUnaryCall<RegisterRequest, Record<string, never>>, cb: RegisterCallback) => {
        const err = this.register(call.request);
        if (err) cb({ code: grpcJs().status.UNKNOWN, details: err, message: err, name: 'Error', metadata: new (grpcJs().Metadata)() });
        else cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socketPath}`, grpcJs().ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.server = server;
    this.logger.v(2).info('Serving device plugin registration server on socket', { path: this.socketPath });
    for (const w of this.startWaiters.splice(0)) w.resolve();
  }

  /** Stop: stops every endpoint and the Registration server. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.startWaiters.splice(0)) w.reject(new Error('the device manager stopped'));
    for (const { e } of this.endpoints.values()) e.stop();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    await Promise.allSettled([...this.running]);
    await this.checkpointWrites;
  }

  /**
   * Register (the Registration service): validates the request and, when valid, dials the plugin in the
   * background. Returns Go's error text for an invalid request.
   */
  register(r: RegisterRequest): string | undefined {
    this.logger.info('Got registration request from device plugin with resource name', { resourceName: r.resourceName });
    if (!SUPPORTED_VERSIONS.includes(r.version)) {
      const err = `requested API version ${goQuote(r.version)} is not supported by kubelet. Supported versions are [${SUPPORTED_VERSIONS.map(goQuote).join(' ')}]`;
      this.logger.info('Bad registration request from device plugin', { resourceName: r.resourceName, err });
      return err;
    }
    if (!isExtendedResourceName(r.resourceName)) {
      const err = `the ResourceName ${goQuote(r.resourceName)} is invalid`;
      this.logger.info('Bad registration request from device plugin', { err });
      return err;
    }
    this.track(this.addEndpoint(r));
    return undefined;
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  private async addEndpoint(r: RegisterRequest): Promise<void> {
    let e: EndpointImpl;
    try {
      e = await this.dialEndpoint(join(this.socketDir, r.endpoint), r.resourceName);
    } catch (err) {
      this.logger.error('Failed to dial device plugin', err, { resourceName: r.resourceName, endpoint: r.endpoint });
      return;
    }
    if (!this.server) {
      e.stop();
      return;
    }
    let options = r.options ?? undefined;
    if (!options) {
      try {
        options = await e.getDevicePluginOptions();
      } catch (err) {
        this.logger.v(2).info('GetDevicePluginOptions failed; assuming none', { resourceName: r.resourceName, err: errorText(err) });
      }
    }
    this.registerEndpoint(r.resourceName, options, e, r.endpoint);
    await this.runEndpoint(r.resourceName, e);
  }

  private dialEndpoint(socketPath: string, resourceName: string): Promise<EndpointImpl> {
    return EndpointImpl.dial(socketPath, resourceName, this.clock, (res, devs) => this.genericDeviceUpdateCallback(res, devs));
  }

  /** registerEndpoint: a re-registration replaces the old endpoint, which is stopped. */
  private registerEndpoint(resourceName: string, options: DevicePluginOptions | undefined, e: EndpointImpl, endpoint: string): void {
    const old = this.endpoints.get(resourceName);
    this.endpoints.set(resourceName, { e, opts: options });
    if (old && old.e !== e) old.e.stop();
    this.logger.v(2).info('Registered endpoint', { resourceName, endpoint });
  }

  /** runEndpoint: streams ListAndWatch until it ends; then the resource's devices are unhealthy (unless replaced). */
  private async runEndpoint(resourceName: string, e: EndpointImpl): Promise<void> {
    try {
      await e.run();
    } catch (err) {
      this.logger.error('Endpoint ended', err, { resourceName });
    }
    e.stop();
    if (this.endpoints.get(resourceName)?.e === e) this.markResourceUnhealthy(resourceName);
    this.logger.v(2).info('Endpoint became unhealthy', { resourceName });
  }

  /**
   * GetWatcherHandler: the handler of `DevicePlugin` plugins for the kubelet's plugin watcher
   * (`<root-dir>/plugins_registry`). Creates the DEPRECATION file in the device plugin directory, as Go does (a
   * failure is logged).
   */
  watcherHandler(): DevicePluginWatcherHandler {
    this.watcherHandlerRequested = true;
    const file = join(this.socketDir, DEPRECATION_FILE_NAME);
    try {
      mkdirSync(this.socketDir, { recursive: true, mode: 0o750 });
      writeFileSync(file, '');
      this.logger.v(4).info('Created deprecation file', { path: file });
    } catch (err) {
      this.logger.error('Failed to create deprecation file', err, { path: file });
    }
    return {
      validatePlugin: (name, endpoint, versions) => this.validatePlugin(name, endpoint, versions),
      registerPlugin: (name, endpoint, versions) => this.registerPlugin(name, endpoint, versions),
      deRegisterPlugin: (name) => this.deRegisterPlugin(name),
    };
  }

  /** ValidatePlugin: one of the plugin's versions is supported, and its name is an extended resource name. */
  validatePlugin(pluginName: string, endpoint: string, versions: string[]): void {
    this.logger.v(2).info('Got Plugin at endpoint with versions', { plugin: pluginName, endpoint, versions });
    if (!versions.some((v) => SUPPORTED_VERSIONS.includes(v))) {
      throw new Error(`manager version, ${DEVICE_PLUGIN_API_VERSION}, is not among plugin supported versions [${versions.join(' ')}]`);
    }
    if (!isExtendedResourceName(pluginName)) {
      throw new Error(`invalid name of device plugin socket: the ResourceName ${goQuote(pluginName)} is invalid`);
    }
  }

  /**
   * RegisterPlugin: dials the plugin's socket (the absolute endpoint, as is), asks for its options, registers the
   * endpoint (replacing an earlier one) and runs it in the background. Waits for start() first.
   */
  async registerPlugin(pluginName: string, endpoint: string, _versions: string[] = []): Promise<void> {
    this.logger.v(2).info('Registering plugin at endpoint', { plugin: pluginName, endpoint });
    if (!this.server) {
      if (this.stopped) throw new Error('the device manager stopped');
      await new Promise<void>((resolve, reject) => this.startWaiters.push({ resolve, reject }));
    }
    let e: EndpointImpl;
    try {
      e = await this.dialEndpoint(endpoint, pluginName);
    } catch (err) {
      throw new Error(`failed to dial device plugin with socketPath ${endpoint}: ${errorText(err)}`);
    }
    let options: DevicePluginOptions;
    try {
      options = await e.getDevicePluginOptions();
    } catch (err) {
      e.stop();
      throw new Error(`failed to get device plugin options: ${errorText(err)}`);
    }
    if (!this.server) {
      e.stop();
      throw new Error('the device manager stopped');
    }
    this.registerEndpoint(pluginName, options, e, endpoint);
    this.track(this.runEndpoint(pluginName, e));
  }

  /** DeRegisterPlugin: stops the plugin's endpoint; its devices turn unhealthy as when the plugin goes away. */
  deRegisterPlugin(pluginName: string): void {
    this.logger.v(2).info('Deregistering plugin', { plugin: pluginName });
    this.endpoints.get(pluginName)?.e.stop();
  }

  /** genericDeviceUpdateCallback: a ListAndWatch update replaces the resource's device lists. */
  private genericDeviceUpdateCallback(resourceName: string, devices: Device[]): void {
    const healthy = new Set<string>();
    const unhealthy = new Set<string>();
    const all = new Map<string, Device>();
    for (const dev of devices) {
      all.set(dev.ID, dev);
      if (dev.health === HEALTHY) healthy.add(dev.ID);
      else unhealthy.add(dev.ID);
    }
    this.healthyDevices.set(resourceName, healthy);
    this.unhealthyDevices.set(resourceName, unhealthy);
    this.allDevices.set(resourceName, all);
    this.logger.v(4).info('Device plugin updated its devices', { resourceName, healthy: healthy.size, unhealthy: unhealthy.size });
    void this.writeCheckpoint().catch((err) => this.logger.error('Writing checkpoint encountered', err));
  }

  /** markResourceUnhealthy: every device of a resource whose plugin went away is unhealthy. */
  private markResourceUnhealthy(resourceName: string): void {
    this.logger.v(2).info('Mark all resources Unhealthy for resource', { resourceName });
    const healthy = this.healthyDevices.get(resourceName) ?? new Set<string>();
    const unhealthy = this.unhealthyDevices.get(resourceName) ?? new Set<string>();
    for (const id of healthy) unhealthy.add(id);
    this.healthyDevices.set(resourceName, new Set());
    this.unhealthyDevices.set(resourceName, unhealthy);
  }

  /**
   * GetCapacity: capacity (all devices) and allocatable (healthy ones) per resource; a resource whose plugin stopped
   * more than endpointStopGracePeriod ago is removed and reported once in `removed`.
   */
  getCapacity(): DevicePluginResourceCapacity {
    const capacity: Record<string, number> = {};
    const allocatable: Record<string, number> = {};
    const removed = new Set<string>();
    let needsUpdateCheckpoint = false;
    for (const [resourceName, devices] of [...this.healthyDevices]) {
      const eI = this.endpoints.get(resourceName);
      if (!eI || eI.e.stopGracePeriodExpired()) {
        if (!eI) this.logger.error('Unexpected: healthyDevices and endpoints are out of sync');
        this.endpoints.delete(resourceName);
        this.healthyDevices.delete(resourceName);
        removed.add(resourceName);
        needsUpdateCheckpoint = true;
      } else {
        capacity[resourceName] = devices.size;
        allocatable[resourceName] = devices.size;
      }
    }
    for (const [resourceName, devices] of [...this.unhealthyDevices]) {
      const eI = this.endpoints.get(resourceName);
      if (!eI || eI.e.stopGracePeriodExpired()) {
        this.endpoints.delete(resourceName);
        this.unhealthyDevices.delete(resourceName);
        removed.add(resourceName);
        needsUpdateCheckpoint = true;
      } else {
        capacity[resourceName] = (capacity[resourceName] ?? 0) + devices.size;
      }
    }
    if (needsUpdateCheckpoint) void this.writeCheckpoint().catch((err) => this.logger.error('Writing checkpoint encountered', err));
    return { capacity, allocatable, removed: [...removed] };
  }

  private isDevicePluginResource(resource: string): boolean {
    return this.healthyDevices.has(resource) || this.allocatedDevices.has(resource);
  }

  /** UpdateAllocatedDevices: frees the devices of pods that are no longer active (once every source is ready). */
  updateAllocatedDevices(): void {
    const active = this.activePods();
    if (!this.sourcesReady()) return;
    const toRemove = this.podDevices.pods();
    for (const pod of active) toRemove.delete(pod.metadata?.uid ?? '');
    if (toRemove.size === 0) return;
    this.logger.v(3).info('Pods to be removed', { podUIDs: [...toRemove] });
    this.podDevices.delete(toRemove);
    this.allocatedDevices = this.podDevices.devices();
  }

  /**
   * The allocated device count per resource. Go's UpdatePluginResources raises the node's allocatable to at least
   * these in the predicate admit handler (sanitizeNodeAllocatable), so pods that already have devices pass
   * admission while their plugin is away (e.g. right after a kubelet restart, before it re-registers).
   */
  allocatedDeviceCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [resource, devices] of this.allocatedDevices) out[resource] = devices.size;
    return out;
  }

  /** resourceAllocator.Admit's device part: allocates for every init and app container in order. */
  async admit(attrs: { pod: V1Pod }): Promise<DeviceAdmitResult> {
    const pod = attrs.pod;
    for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      try {
        await this.allocate(pod, container);
      } catch (err) {
        return { admit: false, reason: 'UnexpectedAdmissionError', message: `Allocate failed due to ${errorText(err)}, which is unexpected` };
      }
    }
    return { admit: true };
  }

  /** Allocate: devices for one container, init containers' devices reusable by the containers after them. */
  async allocate(pod: V1Pod, container: V1Container): Promise<void> {
    const podUID = pod.metadata?.uid ?? '';
    let reuse = this.devicesToReuse.get(podUID);
    if (!reuse) this.devicesToReuse.set(podUID, (reuse = new Map()));
    for (const uid of [...this.devicesToReuse.keys()]) if (uid !== podUID) this.devicesToReuse.delete(uid);
    if ((pod.spec?.initContainers ?? []).some((c) => c.name === container.name)) {
      await this.allocateContainerResources(pod, container, reuse);
      this.podDevices.addContainerAllocatedResources(podUID, container.name, reuse);
      return;
    }
    await this.allocateContainerResources(pod, container, reuse);
    this.podDevices.removeContainerAllocatedResources(podUID, container.name, reuse);
  }

  private async allocateContainerResources(pod: V1Pod, container: V1Container, devicesToReuse: Map<string, Set<string>>): Promise<void> {
    const podUID = pod.metadata?.uid ?? '';
    const contName = container.name;
    let allocatedDevicesUpdated = false;
    // Extended resources are not overcommitted: requests equal limits, so the limits say it all.
    for (const [resource, quantity] of Object.entries(container.resources?.limits ?? {})) {
      if (!this.isDevicePluginResource(resource)) continue;
      const needed = Number.parseInt(String(quantity), 10);
      if (!allocatedDevicesUpdated) {
        this.updateAllocatedDevices();
        allocatedDevicesUpdated = true;
      }
      const allocDevices = await this.devicesToAllocate(podUID, contName, resource, needed, devicesToReuse.get(resource) ?? new Set());
      if (!allocDevices || allocDevices.size === 0) continue;
      const eI = this.endpoints.get(resource);
      if (!eI) {
        this.allocatedDevices = this.podDevices.devices();
        throw new Error(`unknown Device Plugin ${resource}`);
      }
      const devs = [...allocDevices].sort();
      this.logger.v(3).info('Making allocation request for devices for device plugin', { devices: devs, resourceName: resource });
      let resp;
      try {
        resp = await eI.e.allocate(devs);
      } catch (err) {
        // Back to what podDevices says is allocated.
        this.allocatedDevices = this.podDevices.devices();
        throw err;
      }
      if (!resp.containerResponses || resp.containerResponses.length === 0) {
        throw new Error(`no containers return in allocation response ${JSON.stringify(resp)}`);
      }
      this.podDevices.insert(podUID, contName, resource, allocDevices, resp.containerResponses[0]);
    }
    await this.writeCheckpoint();
  }

  /** devicesToAllocate: the devices to give (none when the container has them already), marked in use. */
  private async devicesToAllocate(podUID: string, contName: string, resource: string, required: number, reusableDevices: Set<string>): Promise<Set<string> | undefined> {
    let needed = required;
    const existing = this.podDevices.containerDevices(podUID, contName, resource);
    if (existing) {
      this.logger.v(3).info('Found pre-allocated devices for resource on pod', { resourceName: resource, containerName: contName, podUID, devices: [...existing] });
      needed -= existing.size;
      if (needed !== 0) {
        throw new Error(`pod ${goQuote(podUID)} container ${goQuote(contName)} changed request for resource ${goQuote(resource)} from ${existing.size} to ${required}`);
      }
    }
    if (needed === 0) return undefined;
    this.logger.v(3).info('Need devices to allocate for pod', { needed, resourceName: resource, podUID, containerName: contName });
    const healthy = this.healthyDevices.get(resource);
    if (!healthy) throw new Error(`can't allocate unregistered device ${resource}`);
    const allocated = new Set<string>();
    const allocateRemainingFrom = (devices: Iterable<string>): boolean => {
      for (const d of [...devices].sort()) {
        if (needed <= 0) return true;
        if (allocated.has(d)) continue;
        allocated.add(d);
        needed--;
      }
      return needed <= 0;
    };
    const done = (): Set<string> => {
      let inUse = this.allocatedDevices.get(resource);
      if (!inUse) this.allocatedDevices.set(resource, (inUse = new Set()));
      for (const d of allocated) inUse.add(d);
      return allocated;
    };
    if (allocateRemainingFrom(reusableDevices)) return done();
    const inUse = this.allocatedDevices.get(resource) ?? new Set<string>();
    if (!this.allocatedDevices.has(resource)) this.allocatedDevices.set(resource, inUse);
    const available = new Set([...healthy].filter((d) => !inUse.has(d)));
    if (available.size < needed) {
      throw new Error(`requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${available.size}`);
    }
    // No topology manager: every device is "without affinity"; the plugin may choose among them first.
    const preferred = await this.callGetPreferredAllocationIfAvailable(podUID, contName, resource, new Set([...available, ...allocated]), allocated, required);
    if (preferred && allocateRemainingFrom([...preferred].filter((d) => available.has(d)))) return done();
    // Another allocation may have taken devices while the plugin was asked.
    const stillAvailable = [...available].filter((d) => !(this.allocatedDevices.get(resource)?.has(d) ?? false));
    if (allocateRemainingFrom(stillAvailable)) return done();
    throw new Error(`unexpectedly allocated less resources than required. Requested: ${required}, Got: ${required - needed}`);
  }

  private async callGetPreferredAllocationIfAvailable(
    podUID: string,
    contName: string,
    resource: string,
    available: Set<string>,
    mustInclude: Set<string>,
    size: number,
  ): Promise<Set<string> | undefined> {
    const eI = this.endpoints.get(resource);
    if (!eI) throw new Error(`endpoint not found in cache for a registered resource: ${resource}`);
    if (!eI.opts?.getPreferredAllocationAvailable) {
      this.logger.v(4).info('Plugin options indicate to skip GetPreferredAllocation for resource', { resourceName: resource });
      return undefined;
    }
    this.logger.v(4).info('Issuing a GetPreferredAllocation call for container', { containerName: contName, podUID });
    try {
      const resp = await eI.e.getPreferredAllocation([...available].sort(), [...mustInclude].sort(), size);
      return new Set(resp.containerResponses?.[0]?.deviceIDs ?? []);
    } catch (err) {
      throw new Error(`device plugin GetPreferredAllocation rpc failed with err: ${errorText(err)}`);
    }
  }

  /**
   * GetDeviceRunContainerOptions: PreStartContainer for plugins that ask for it, re-allocation when the kubelet lost
   * the container's allocation (a restart race), then the container's envs, mounts, devices and annotations.
   */
  async getDeviceRunContainerOptions(pod: V1Pod, container: V1Container): Promise<DeviceRunContainerOptions | undefined> {
    const podUID = pod.metadata?.uid ?? '';
    let needsReAllocate = false;
    for (const resource of Object.keys(container.resources?.limits ?? {})) {
      if (!this.isDevicePluginResource(resource)) continue;
      await this.callPreStartContainerIfNeeded(podUID, container.name, resource);
      if (!this.podDevices.containerDevices(podUID, container.name, resource)) needsReAllocate = true;
    }
    if (needsReAllocate) {
      this.logger.v(2).info('Needs re-allocate device plugin resources for pod', { podUID, containerName: container.name });
      await this.allocate(pod, container);
    }
    return this.podDevices.deviceRunContainerOptions(podUID, container.name, (what, key, a, b) =>
      this.logger.error(`${what} has conflicting setting`, undefined, { key, first: a, second: b }),
    );
  }

  private async callPreStartContainerIfNeeded(podUID: string, contName: string, resource: string): Promise<void> {
    const eI = this.endpoints.get(resource);
    if (!eI) throw new Error(`endpoint not found in cache for a registered resource: ${resource}`);
    if (!eI.opts?.preStartRequired) {
      this.logger.v(4).info('Plugin options indicate to skip PreStartContainer for resource', { resourceName: resource });
      return;
    }
    const devices = this.podDevices.containerDevices(podUID, contName, resource);
    if (!devices) throw new Error(`no devices found allocated in local cache for pod ${podUID}, container ${contName}, resource ${resource}`);
    this.logger.v(4).info('Issuing a PreStartContainer call for container', { containerName: contName, podUID });
    try {
      await eI.e.preStartContainer([...devices].sort());
    } catch (err) {
      throw new Error(`device plugin PreStartContainer rpc failed with err: ${errorText(err)}`);
    }
  }

  /** GetDevices: a container's devices for the pod resources API. */
  getDevices(podUID: string, containerName: string): ContainerDevices[] {
    return this.podDevices.getContainerDevices(podUID, containerName);
  }

  /** GetAllocatableDevices: every healthy device, one entry per device as Go's pod resources server. */
  getAllocatableDevices(): ContainerDevices[] {
    const out: ContainerDevices[] = [];
    for (const resource of [...this.healthyDevices.keys()].sort()) {
      for (const id of [...(this.healthyDevices.get(resource) ?? [])].sort()) {
        const topology = this.allDevices.get(resource)?.get(id)?.topology;
        out.push({ resourceName: resource, deviceIds: [id], ...(topology ? { topology } : {}) });
      }
    }
    return out;
  }

  /** ShouldResetExtendedResourceCapacity: no checkpoint means the node's device state is gone (a new node or a wiped root dir). */
  shouldResetExtendedResourceCapacity(): boolean {
    return !existsSync(this.checkpointPath);
  }

  /** writeCheckpoint: allocations and registered (healthy) devices, written in call order. */
  private writeCheckpoint(): Promise<void> {
    const registered: Record<string, string[]> = {};
    for (const [resource, devices] of this.healthyDevices) registered[resource] = [...devices].sort();
    const data = { PodDeviceEntries: this.podDevices.toCheckpointData(), RegisteredDevices: registered };
    const write = this.checkpointWrites.then(() => writeCheckpointFile(this.checkpointPath, data));
    this.checkpointWrites = write.catch(() => undefined);
    return write;
  }

  /**
   * readCheckpoint: allocations from the last run, and each registered resource with no devices and a stopped
   * endpoint until its plugin registers again (removed after the grace period if it does not).
   */
  private async readCheckpoint(): Promise<void> {
    let data;
    try {
      data = await readCheckpointFile(this.checkpointPath);
    } catch (err) {
      if (err instanceof CorruptCheckpointError) this.logger.error('Failed to retrieve checkpoint', err, { checkpoint: CHECKPOINT_FILE_NAME });
      throw err;
    }
    if (!data) return;
    this.podDevices.fromCheckpointData(data.PodDeviceEntries, (entry, err) =>
      this.logger.error('Skipping a checkpoint entry whose allocation response does not decode', err, { podUID: entry.PodUID, resourceName: entry.ResourceName }),
    );
    this.allocatedDevices = this.podDevices.devices();
    for (const resource of Object.keys(data.RegisteredDevices)) {
      this.healthyDevices.set(resource, new Set());
      this.unhealthyDevices.set(resource, new Set());
      this.endpoints.set(resource, { e: EndpointImpl.stopped(resource, this.clock), opts: undefined });
    }
  }
}
