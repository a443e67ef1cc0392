// The few API calls node status and the node lease make, over @kubernetes/client-node 1.x (loaded by the first call).
import type { CoordinationV1Api, CoreV1Api, KubeConfig, V1Lease, V1Node } from '@kubernetes/client-node';
import { nodeToWire } from './wire.js';
import { apiCallOptions, formatMicroTime, formatTime, loadClientNode, PatchContentType } from '@kubelet-ts/core';

export interface RequestOptions {
  /** Aborts the request (stop(), or a timeout). */
  signal?: AbortSignal;
  /** GET from the API server's watch cache with resourceVersion "0" (Go's util.FromApiserverCache). */
  fromCache?: boolean;
}

/** Node calls. Errors carry the HTTP status in `code` (client-node's ApiException does). */
export interface NodeApi {
  getNode(name: string, opts?: RequestOptions): Promise<V1Node>;
  createNode(node: V1Node, opts?: RequestOptions): Promise<V1Node>;
  /** PATCH nodes/<name>/status with Content-Type application/strategic-merge-patch+json. */
  patchNodeStatus(name: string, patch: object, opts?: RequestOptions): Promise<V1Node>;
  /** PATCH nodes/<name> (metadata) with Content-Type application/strategic-merge-patch+json. */
  patchNode(name: string, patch: object, opts?: RequestOptions): Promise<V1Node>;
}

/**
 * Lease calls. renewTime/acquireTime travel as strings with six fractional digits (MicroTime):
 * the client must send the string as given and hand back what the server sent.
 */
export interface LeaseApi {
  getLease(namespace: string, name: string, opts?: RequestOptions): Promise<V1Lease>;
  createLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease>;
  /** PUT, with metadata.resourceVersion as the optimistic lock (409 on a stale one). */
  updateLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease>;
}

export type KubeClient = NodeApi & LeaseApi;

/** What the components accept: our narrow client, client-node API objects, or a KubeConfig. */
export type KubeClientSource = KubeClient | ClientNodeApis | KubeConfig;

export interface ClientNodeKubeClientOptions {
  /** Per-request timeout (Go: the heartbeat client's timeout). 0: none. Default 10 s. */
  timeoutMs?: number;
}

/** The client-node API objects the client calls, when the caller has made them. */
export interface ClientNodeApis {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
}

/** The KubeClient over client-node's CoreV1Api and CoordinationV1Api. */
export class ClientNodeKubeClient implements KubeClient {
  private apis: Promise<ClientNodeApis> | undefined;
  private readonly timeoutMs: number;

  constructor(
    private readonly source: KubeConfig | ClientNodeApis,
    opts: ClientNodeKubeClientOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** The API objects and the options of one call; from a KubeConfig, client-node is loaded by the first. */
  private async call(opts: RequestOptions | undefined, contentType?: string): Promise<ClientNodeApis & { options: ReturnType<typeof apiCallOptions> }> {
    const source = this.source;
    this.apis ??= isKubeConfig(source)
      ? loadClientNode().then((k) => ({ core: source.makeApiClient(k.CoreV1Api), coordination: source.makeApiClient(k.CoordinationV1Api) }))
      : Promise.resolve(source);
    const apis = await this.apis;
    return { ...apis, options: apiCallOptions({ signal: opts?.signal, timeoutMs: this.timeoutMs, fromCache: opts?.fromCache, contentType }) };
  }

  async getNode(name: string, opts?: RequestOptions): Promise<V1Node> {
    const { core, options } = await this.call(opts);
    return core.readNode({ name }, options);
  }

  async createNode(node: V1Node, opts?: RequestOptions): Promise<V1Node> {
    // The wire form (whole-second times, as Go marshals metav1.Time); client-node passes strings through.
    const { core, options } = await this.call(opts);
    return core.createNode({ body: nodeToWire(node) as V1Node }, options);
  }

  async patchNodeStatus(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    const { core, options } = await this.call(opts, PatchContentType.StrategicMergePatch);
    return core.patchNodeStatus({ name, body: patch }, options);
  }

  async patchNode(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    const { core, options } = await this.call(opts, PatchContentType.StrategicMergePatch);
    return core.patchNode({ name, body: patch }, options);
  }

  // client-node types MicroTime fields as Date (V1MicroTime) but its serializer passes an unknown
  // type's value through untouched: a string with six digits goes on the wire as it is, and the
  // server's string comes back as a string.
  async getLease(namespace: string, name: string, opts?: RequestOptions): Promise<V1Lease> {
    const { coordination, options } = await this.call(opts);
    return coordination.readNamespacedLease({ name, namespace }, options);
  }

  async createLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const namespace = lease.metadata?.namespace ?? 'default';
    const { coordination, options } = await this.call(opts);
    return coordination.createNamespacedLease({ namespace, body: leaseToWire(lease) }, options);
  }

  async updateLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const namespace = lease.metadata?.namespace ?? 'default';
    const name = lease.metadata?.name ?? '';
    const { coordination, options } = await this.call(opts);
    return coordination.replaceNamespacedLease({ name, namespace, body: leaseToWire(lease) }, options);
  }
}

/**
 * A lease with every time as Go marshals it: MicroTime fields (renewTime, acquireTime) with six
 * fractional digits, metav1.Time fields (creationTimestamp, ...) in whole seconds. client-node would
 * send Dates with three digits, which kube-apiserver rejects for MicroTime.
 */
export function leaseToWire(lease: V1Lease): V1Lease {
  const text = JSON.stringify(lease, function (this: Record<string, unknown>, key: string, value: unknown) {
    const orig = this[key];
    if (orig instanceof Date) return key === 'renewTime' || key === 'acquireTime' ? formatMicroTime(orig) : formatTime(orig);
    return value;
  });
  return JSON.parse(text) as V1Lease;
}

function isKubeConfig(v: KubeConfig | ClientNodeApis): v is KubeConfig {
  return typeof (v as KubeConfig).makeApiClient === 'function';
}

function isKubeClient(v: unknown): v is KubeClient {
  return typeof v === 'object' && v !== null && typeof (v as KubeClient).patchNodeStatus === 'function' && typeof (v as KubeClient).updateLease === 'function';
}

/** Our KubeClient from any accepted source. */
export function toKubeClient(source: KubeClientSource, opts?: ClientNodeKubeClientOptions): KubeClient {
  return isKubeClient(source) ? source : new ClientNodeKubeClient(source, opts);
}
