// endpointImpl (Go: pkg/kubelet/cm/devicemanager/endpoint.go): the kubelet's client of one device plugin.
import type * as grpc from '@grpc/grpc-js';
import type { Clock } from '@kubelet-ts/core';
import {
  loadDevicePluginPackage,
  type AllocateRequest,
  type AllocateResponse,
  type Device,
  type DevicePluginOptions,
  type ListAndWatchResponse,
  type PreferredAllocationRequest,
  type PreferredAllocationResponse, grpcJs } from './proto.js';

/** endpointStopGracePeriod: how long a stopped plugin's resource stays on the node before it is removed. */
export const ENDPOINT_STOP_GRACE_PERIOD_MS = 5 * 60_000;
/** How long dialing a plugin may take (Go: dial's 10 s timeout). */
export const DIAL_TIMEOUT_MS = 10_000;

/** What the manager needs of an endpoint; stopped endpoints (from the checkpoint, or whose plugin went away) refuse calls. */
export interface Endpoint {
  readonly resourceName: string;
  /** Streams ListAndWatch into the callback until the stream ends or the endpoint is stopped. */
  run(): Promise<void>;
  stop(): void;
  isStopped(): boolean;
  stopGracePeriodExpired(): boolean;
  getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<PreferredAllocationResponse>;
  allocate(devs: string[]): Promise<AllocateResponse>;
  preStartContainer(devs: string[]): Promise<void>;
}

type Unary<Req, Res> = (req: Req, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Res) => void) => grpc.ClientUnaryCall;

interface DevicePluginClient extends grpc.Client {
  GetDevicePluginOptions: Unary<Record<string, never>, DevicePluginOptions>;
  ListAndWatch(req: Record<string, never>): grpc.ClientReadableStream<ListAndWatchResponse>;
  GetPreferredAllocation: Unary<PreferredAllocationRequest, PreferredAllocationResponse>;
  Allocate: Unary<AllocateRequest, AllocateResponse>;
  PreStartContainer: Unary<{ devicesIds: string[] }, Record<string, never>>;
}

function unary<Req, Res>(client: DevicePluginClient, method: Unary<Req, Res>, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(client, req, {}, (err, res) => (err ? reject(err) : resolve(res as Res)));
  });
}

/** errEndpointStopped. */
function endpointStopped(resourceName: string, socketPath: string): Error {
  return new Error(`endpoint {resourceName: ${resourceName}, socketPath: ${socketPath}} has been stopped`);
}

class StoppedState {
  stopTime?: number;
}

export class EndpointImpl implements Endpoint {
  private readonly client?: DevicePluginClient;
  private readonly state = new StoppedState();
  private stream?: grpc.ClientReadableStream<ListAndWatchResponse>;

  private constructor(
    readonly resourceName: string,
    readonly socketPath: string,
    private readonly clock: Clock,
    private readonly callback: (resourceName: string, devices: Device[]) => void,
    client: DevicePluginClient | undefined,
  ) {
    this.client = client;
    if (!client) this.state.stopTime = clock.now();
  }

  /** newEndpointImpl: dials the plugin's socket (failing after DIAL_TIMEOUT_MS). */
  static async dial(socketPath: string, resourceName: string, clock: Clock, callback: (resourceName: string, devices: Device[]) => void): Promise<EndpointImpl> {
    const { DevicePlugin } = loadDevicePluginPackage();
    const client = new DevicePlugin(`unix://${socketPath}`, grpcJs().credentials.createInsecure(), { 'grpc.enable_retries': 0 }) as DevicePluginClient;
    try {
      await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + DIAL_TIMEOUT_MS, (err) => (err ? reject(err) : resolve())));
    } catch (err) {
      client.close();
      throw new Error(`failed to dial device plugin: ${(err as Error).message}`);
    }
    return new EndpointImpl(resourceName, socketPath, clock, callback, client);
  }

  /** newStoppedEndpointImpl: a placeholder for a resource known only from the checkpoint, stopped from now. */
  static stopped(resourceName: string, clock: Clock): EndpointImpl {
    return new EndpointImpl(resourceName, '', clock, () => {}, undefined);
  }

  /** GetDevicePluginOptions, for a plugin that registered without options. */
  async getDevicePluginOptions(): Promise<DevicePluginOptions> {
    if (!this.client || this.isStopped()) throw endpointStopped(this.resourceName, this.socketPath);
    return unary(this.client, this.client.GetDevicePluginOptions, {});
  }

  run(): Promise<void> {
    const client = this.client;
    if (!client || this.isStopped()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const stream = client.ListAndWatch({});
      this.stream = stream;
      stream.on('data', (resp: ListAndWatchResponse) => {
        if (!this.isStopped()) this.callback(this.resourceName, resp.devices ?? []);
      });
      stream.on('error', (err: grpc.ServiceError) => {
        if (err.code === grpcJs().status.CANCELLED && this.isStopped()) resolve();
        else reject(new Error(`listAndWatch ended unexpectedly for device plugin ${this.resourceName} with error ${err.details || err.message}`));
      });
      stream.on('end', () => resolve());
    });
  }

  isStopped(): boolean {
    return this.state.stopTime !== undefined;
  }

  stopGracePeriodExpired(): boolean {
    return this.state.stopTime !== undefined && this.clock.since(this.state.stopTime) > ENDPOINT_STOP_GRACE_PERIOD_MS;
  }

  stop(): void {
    if (this.state.stopTime === undefined) this.state.stopTime = this.clock.now();
    this.stream?.cancel();
    this.stream = undefined;
    this.client?.close();
  }

  async getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<PreferredAllocationResponse> {
    if (!this.client || this.isStopped()) throw endpointStopped(this.resourceName, this.socketPath);
    return unary(this.client, this.client.GetPreferredAllocation, {
      containerRequests: [{ availableDeviceIDs: available, mustIncludeDeviceIDs: mustInclude, allocationSize: size }],
    });
  }

  async allocate(devs: string[]): Promise<AllocateResponse> {
    if (!this.client || this.isStopped()) throw endpointStopped(this.resourceName, this.socketPath);
    return unary(this.client, this.client.Allocate, { containerRequests: [{ devicesIds: devs }] });
  }

  async preStartContainer(devs: string[]): Promise<void> {
    if (!this.client || this.isStopped()) throw endpointStopped(this.resourceName, this.socketPath);
    // Go: a 30 s (pluginapi.KubeletPreStartContainerRPCTimeoutInSecs) deadline.
    await new Promise<void>((resolve, reject) => {
      this.client!.PreStartContainer({ devicesIds: devs }, { deadline: Date.now() + 30_000 }, (err) => (err ? reject(err) : resolve()));
    });
  }
}
