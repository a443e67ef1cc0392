// The few API calls node status and the node lease make, over @kubernetes/client-node 1.x.
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1Lease,
  type V1Node,
} from '@kubernetes/client-node';
import { nodeToWire } from './wire.js';
import { formatMicroTime, formatTime } from '@kubelet-ts/core';

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
export type KubeClientSource = KubeClient | { core: CoreV1Api; coordination: CoordinationV1Api } | KubeConfig;

function middleware(pre: (ctx: RequestContext) => void): ObservableMiddleware {
  return {
    pre: (ctx: RequestContext) => {
      pre(ctx);
      return new Observable(Promise.resolve(ctx));
    },
    post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
  };
}

function withRequestOptions(opts: RequestOptions | undefined, timeoutMs: number, base?: ConfigurationOptions): ConfigurationOptions {
  const signals: AbortSignal[] = [];
  if (opts?.signal) signals.push(opts.signal);
  if (timeoutMs > 0) signals.push(AbortSignal.timeout(timeoutMs));
  const extra: ObservableMiddleware[] = [];
  if (signals.length > 0) {
    const signal = signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    extra.push(middleware((ctx) => ctx.setSignal(signal)));
  }
  if (opts?.fromCache) extra.push(middleware((ctx) => ctx.setQueryParam('resourceVersion', '0')));
  return { ...base, middleware: [...(base?.middleware ?? []), ...extra], middlewareMergeStrategy: 'append' };
}

export interface ClientNodeKubeClientOptions {
  /** Per-request timeout (Go: the heartbeat client's timeout). 0: none. Default 10 s. */
  timeoutMs?: number;
}

/** The KubeClient over client-node's CoreV1Api and CoordinationV1Api. */
export class ClientNodeKubeClient implements KubeClient {
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly timeoutMs: number;

  constructor(source: KubeConfig | { core: CoreV1Api; coordination: CoordinationV1Api }, opts: ClientNodeKubeClientOptions = {}) {
    if (source instanceof KubeConfig) {
      this.core = source.makeApiClient(CoreV1Api);
      this.coordination = source.makeApiClient(CoordinationV1Api);
    } else {
      this.core = source.core;
      this.coordination = source.coordination;
    }
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  getNode(name: string, opts?: RequestOptions): Promise<V1Node> {
    return this.core.readNode({ name }, withRequestOptions(opts, this.timeoutMs));
  }

  createNode(node: V1Node, opts?: RequestOptions): Promise<V1Node> {
    // The wire form (whole-second times, as Go marshals metav1.Time); client-node passes strings through.
    return this.core.createNode({ body: nodeToWire(node) as V1Node }, withRequestOptions(opts, this.timeoutMs));
  }

  patchNodeStatus(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    const smp = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
    return this.core.patchNodeStatus({ name, body: patch }, withRequestOptions(opts, this.timeoutMs, smp));
  }

  patchNode(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    const smp = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
    return this.core.patchNode({ name, body: patch }, withRequestOptions(opts, this.timeoutMs, smp));
  }

  // client-node types MicroTime fields as Date (V1MicroTime) but its serializer passes an unknown
  // type's value through untouched: a string with six digits goes on the wire as it is, and the
  // server's string comes back as a string.
  getLease(namespace: string, name: string, opts?: RequestOptions): Promise<V1Lease> {
    return this.coordination.readNamespacedLease({ name, namespace }, withRequestOptions(opts, this.timeoutMs));
  }

  createLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const namespace = lease.metadata?.namespace ?? 'default';
    return this.coordination.createNamespacedLease({ namespace, body: leaseToWire(lease) }, withRequestOptions(opts, this.timeoutMs));
  }

  updateLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const namespace = lease.metadata?.namespace ?? 'default';
    const name = lease.metadata?.name ?? '';
    return this.coordination.replaceNamespacedLease({ name, namespace, body: leaseToWire(lease) }, withRequestOptions(opts, this.timeoutMs));
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

function isKubeClient(v: unknown): v is KubeClient {
  return typeof v === 'object' && v !== null && typeof (v as KubeClient).patchNodeStatus === 'function' && typeof (v as KubeClient).updateLease === 'function';
}

/** Our KubeClient from any accepted source. */
export function toKubeClient(source: KubeClientSource, opts?: ClientNodeKubeClientOptions): KubeClient {
  return isKubeClient(source) ? source : new ClientNodeKubeClient(source, opts);
}
