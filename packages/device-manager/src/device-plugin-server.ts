// A device plugin's side of the v1beta1 API: serves DevicePlugin on a socket in the kubelet's device plugin directory
// and registers with the kubelet. The sample device plugin (tools/sample-device-plugin) and the tests run it.
import { stat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { defaultLogger, realClock, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import {
  DEVICE_PLUGIN_API_VERSION,
  HEALTHY,
  KUBELET_SOCKET,
  loadDevicePluginPackage,
  type AllocateRequest,
  type AllocateResponse,
  type ContainerAllocateResponse,
  type Device,
  type DevicePluginOptions,
  type ListAndWatchResponse,
  type PreferredAllocationRequest,
  type PreferredAllocationResponse,
  type RegisterRequest, grpcJs } from './proto.js';

export interface DevicePluginServerOptions {
  /** The extended resource, e.g. `example.com/foo`. */
  resourceName: string;
  /** The device plugin directory (the kubelet's `<root-dir>/device-plugins`). */
  socketDir: string;
  /** The plugin's socket name in socketDir. Default: the resource name with `/` and `.` replaced, plus `.sock`. */
  endpoint?: string;
  /** The devices, all Healthy at first. */
  deviceIds: string[];
  options?: Partial<DevicePluginOptions>;
  /** The response for one container's devices. Default: the env `<RESOURCE>_DEVICES=<ids>` only. */
  allocate?: (deviceIds: string[]) => ContainerAllocateResponse;
  /** The preferred devices for a request. Default: the first `size` available ones, must-include first. */
  preferred?: (available: string[], mustInclude: string[], size: number) => string[];
  /**
   * Re-register when the kubelet's socket is recreated (the kubelet restarted and cleaned the directory), checking
   * every this many ms. Default 0: off.
   */
  watchKubeletRestartMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The env a default Allocate sets: `EXAMPLE_COM_FOO_DEVICES` for `example.com/foo`. */
export function defaultDevicesEnvName(resourceName: string): string {
  return `${resourceName.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}_DEVICES`;
}

type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;

export class DevicePluginServer {
  readonly endpoint: string;
  readonly socketPath: string;
  private readonly devices = new Map<string, Device>();
  private readonly streams = new Set<grpc.ServerWritableStream<unknown, ListAndWatchResponse>>();
  private server?: grpc.Server;
  private watchTimer?: TimerHandle;
  private kubeletSocketIno?: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** What the kubelet asked, for tests and the sample plugin's log. */
  readonly calls: { allocate: string[][]; preStart: string[][]; preferred: PreferredAllocationRequest[] } = { allocate: [], preStart: [], preferred: [] };

  constructor(private readonly opts: DevicePluginServerOptions) {
    this.endpoint = opts.endpoint ?? `${opts.resourceName.replace(/[/.]/g, '_')}.sock`;
    this.socketPath = join(opts.socketDir, this.endpoint);
    for (const id of opts.deviceIds) this.devices.set(id, { ID: id, health: HEALTHY });
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
  }

  get pluginOptions(): DevicePluginOptions {
    return { preStartRequired: false, getPreferredAllocationAvailable: false, ...this.opts.options };
  }

  private list(): ListAndWatchResponse {
    return { devices: [...this.devices.values()].map((d) => ({ ...d })) };
  }

  /** Changes a device's health (or adds one) and streams the new list to the kubelet. */
  setDevice(id: string, health: string): void {
    this.devices.set(id, { ID: id, health });
    const resp = this.list();
    for (const s of this.streams) s.write(resp);
  }

  /** Removes a device and streams the new list. */
  removeDevice(id: string): void {
    this.devices.delete(id);
    const resp = this.list();
    for (const s of this.streams) s.write(resp);
  }

  private allocateOne(ids: string[]): ContainerAllocateResponse {
    return this.opts.allocate?.(ids) ?? { envs: { [defaultDevicesEnvName(this.opts.resourceName)]: ids.join(',') }, mounts: [], devices: [], annotations: {}, cdiDevices: [] };
  }

  /** Serves the DevicePlugin service on socketPath. */
  async serve(): Promise<void> {
    await rm(this.socketPath, { force: true });
    const server = new (grpcJs().Server)();
    server.addService(loadDevicePluginPackage().DevicePlugin.service, {
      GetDevicePluginOptions: (_call: unknown, cb: Callback<DevicePluginOptions>) => cb(null, this.pluginOptions),
      ListAndWatch: (call: grpc.ServerWritableStream<unknown, ListAndWatchResponse>) => {
        this.streams.add(call);
        call.write(this.list());
        call.on('cancelled', () => this.streams.delete(call));
        call.on('close', () => this.streams.delete(call));
      },
      GetPreferredAllocation: (call: grpc.ServerUnaryCall<PreferredAllocationRequest, PreferredAllocationResponse>, cb: Callback<PreferredAllocationResponse>) => {
        this.calls.preferred.push(call.request);
        const containerResponses = call.request.containerRequests.map((r) => {
          const chosen =
            this.opts.preferred?.(r.availableDeviceIDs, r.mustIncludeDeviceIDs, r.allocationSize) ??
            [...new Set([...r.mustIncludeDeviceIDs, ...r.availableDeviceIDs])].slice(0, r.allocationSize);
          return { deviceIDs: chosen };
        });
        cb(null, { containerResponses });
      },
      Allocate: (call: grpc.ServerUnaryCall<AllocateRequest, AllocateResponse>, cb: Callback<AllocateResponse>) => {
        const containerResponses: ContainerAllocateResponse[] = [];
        for (const r of call.request.containerRequests) {
          const unknown = r.devicesIds.filter((id) => !this.devices.has(id));
          if (unknown.length > 0) {
            const message = `invalid allocation request for ${this.opts.resourceName}: unknown devices ${unknown.join(',')}`;
            cb(Object.assign(new Error(message), { code: grpcJs().status.INVALID_ARGUMENT, details: message, metadata: new (grpcJs().Metadata)() }));
            return;
          }
          this.calls.allocate.push([...r.devicesIds]);
          try {
            containerResponses.push(this.allocateOne(r.devicesIds));
          } catch (err) {
            const message = (err as Error).message;
            cb(Object.assign(new Error(message), { code: grpcJs().status.UNKNOWN, details: message, metadata: new (grpcJs().Metadata)() }));
            return;
          }
        }
        this.logger.info('Allocate', { devices: call.request.containerRequests.map((r) => r.devicesIds) });
        cb(null, { containerResponses });
      },
      PreStartContainer: (call: grpc.ServerUnaryCall<{ devicesIds: string[] }, Record<string, never>>, cb: Callback<Record<string, never>>) => {
        this.calls.preStart.push([...call.request.devicesIds]);
        this.logger.info('PreStartContainer', { devices: call.request.devicesIds });
        cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socketPath}`, grpcJs().ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.server = server;
  }

  /** Calls the kubelet's Registration service; rejects with its error. */
  async register(kubeletSocket = join(this.opts.socketDir, KUBELET_SOCKET), request: Partial<RegisterRequest> = {}): Promise<void> {
    const { Registration } = loadDevicePluginPackage();
    const client = new Registration(`unix://${kubeletSocket}`, grpcJs().credentials.createInsecure()) as grpc.Client & {
      Register(req: RegisterRequest, options: grpc.CallOptions, cb: Callback<Record<string, never>>): void;
    };
    try {
      await new Promise<void>((resolve, reject) =>
        client.Register(
          { version: DEVICE_PLUGIN_API_VERSION, endpoint: this.endpoint, resourceName: this.opts.resourceName, options: this.pluginOptions, ...request },
          { deadline: Date.now() + 10_000 },
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    } finally {
      client.close();
    }
    this.kubeletSocketIno = (await stat(kubeletSocket).catch(() => undefined))?.ino;
  }

  /** Serves, registers, and (with watchKubeletRestartMs) re-serves and re-registers after a kubelet restart. */
  async start(): Promise<void> {
    await this.serve();
    await this.register();
    const every = this.opts.watchKubeletRestartMs ?? 0;
    if (every > 0) this.watchTimer = this.clock.setInterval(() => void this.checkKubeletRestart(), every);
  }

  private checking = false;
  private async checkKubeletRestart(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const kubeletSocket = join(this.opts.socketDir, KUBELET_SOCKET);
      const ino = (await stat(kubeletSocket).catch(() => undefined))?.ino;
      const ownGone = (await stat(this.socketPath).catch(() => undefined)) === undefined;
      if (ino === undefined || (ino === this.kubeletSocketIno && !ownGone)) return;
      this.logger.info('The kubelet restarted: serving and registering again', { socket: this.socketPath });
      await this.closeServer();
      await this.serve();
      await this.register();
    } catch (err) {
      this.logger.error('Re-registration failed; retrying', err);
      this.kubeletSocketIno = undefined;
    } finally {
      this.checking = false;
    }
  }

  private async closeServer(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) server.forceShutdown();
  }

  /** Stops serving: the kubelet sees the ListAndWatch stream end. */
  async stop(): Promise<void> {
    this.watchTimer?.cancel();
    this.watchTimer = undefined;
    await this.closeServer();
    await rm(this.socketPath, { force: true });
  }
}
