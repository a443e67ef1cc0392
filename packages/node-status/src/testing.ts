// Test doubles for @kubelet-ts/node-status, published as `@kubelet-ts/node-status/testing`.
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import type { KubeClient, RequestOptions } from './kube-client.js';
import type { MachineInfo } from './machine-info.js';
import type { NodeLease } from './node-lease.js';
import type { NodeStatusProvider } from './node-status-manager.js';
import { nodeFromWire, nodePatchSchema, nodeToWire } from './wire.js';
import { applyStrategicMergePatch, isJsonObject, type Json, type JsonObject } from '@kubelet-ts/core';
import { FakeApiError } from '@kubelet-ts/core/testing';

/** Machine facts for tests: 4 CPUs, 8 GiB, 100 GiB root filesystem. */
export function fakeMachineInfo(overrides: Partial<MachineInfo> = {}): MachineInfo {
  return {
    numCores: 4,
    memoryCapacity: 8 * 1024 ** 3,
    machineID: 'fake-machine-id',
    systemUUID: 'fake-system-uuid',
    bootID: 'fake-boot-id',
    kernelVersion: '6.1.0-fake',
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    rootfsCapacity: 100 * 1024 ** 3,
    rootfsInodes: 6_553_600,
    ...overrides,
  };
}

/** An API error as client-node's ApiException shapes it: `code` and a kube Status `body` (JSON text). */
export { FakeApiError };

const reasons: Record<number, string> = { 400: 'BadRequest', 404: 'NotFound', 409: 'Conflict', 422: 'Invalid', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout' };

export type FakeMethod = keyof KubeClient;

export interface FakeCall {
  method: FakeMethod;
  name: string;
  /** The request body as JSON text (what would go on the wire), when there is one. */
  body?: string;
  /** fromCache was asked for (GET with resourceVersion=0). */
  fromCache?: boolean;
}

/**
 * An in-memory API server for nodes and leases behind the KubeClient interface: resourceVersions,
 * uids, AlreadyExists/NotFound/Conflict, strategic merge patches of node status and metadata,
 * MicroTime validation of lease times, injected failures and a call log.
 */
export class FakeKubeClient implements KubeClient {
  readonly nodes = new Map<string, JsonObject>();
  readonly leases = new Map<string, JsonObject>();
  readonly calls: FakeCall[] = [];
  /** When true every call fails as if the server were down (connection refused). */
  down = false;
  private rv = 1;
  private uidSeq = 0;
  private failures: Array<{ remaining: number; code: number; methods?: FakeMethod[] }> = [];

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** The next n calls (of these methods) fail with code. */
  failNext(n: number, code: number, methods?: FakeMethod[]): void {
    this.failures.push({ remaining: n, code, methods });
  }

  callsOf(method: FakeMethod): FakeCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  node(name: string): V1Node | undefined {
    const n = this.nodes.get(name);
    return n ? nodeFromWire(structuredClone(n)) : undefined;
  }

  lease(namespace: string, name: string): JsonObject | undefined {
    const l = this.leases.get(`${namespace}/${name}`);
    return l ? structuredClone(l) : undefined;
  }

  /** Writes a node as is (e.g. a node left by an earlier kubelet run). */
  putNode(node: V1Node): V1Node {
    const wire = nodeToWire(node);
    const meta = (wire.metadata ??= {}) as JsonObject;
    meta.uid ??= `uid-${++this.uidSeq}`;
    meta.resourceVersion = String(++this.rv);
    this.nodes.set(String(meta.name), wire);
    return nodeFromWire(structuredClone(wire));
  }

  private begin(method: FakeMethod, name: string, body?: unknown, opts?: RequestOptions): void {
    const call: FakeCall = { method, name };
    if (body !== undefined) call.body = JSON.stringify(body, (_k, v: unknown) => v);
    if (opts?.fromCache) call.fromCache = true;
    this.calls.push(call);
    if (opts?.signal?.aborted) throw opts.signal.reason;
    if (this.down) throw Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:6443`), { code: 'ECONNREFUSED' });
    const rule = this.failures.find((f) => f.remaining > 0 && (!f.methods || f.methods.includes(method)));
    if (rule) {
      rule.remaining--;
      throw new FakeApiError(rule.code, reasons[rule.code] ?? 'Unknown', `injected failure ${rule.code}`);
    }
  }

  private stamp(obj: JsonObject, isNew: boolean): void {
    const meta = (obj.metadata ??= {}) as JsonObject;
    if (isNew) {
      meta.uid = `uid-${++this.uidSeq}`;
      meta.creationTimestamp = new Date(Math.floor(this.now() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    }
    meta.resourceVersion = String(++this.rv);
  }

  async getNode(name: string, opts?: RequestOptions): Promise<V1Node> {
    this.begin('getNode', name, undefined, opts);
    const n = this.nodes.get(name);
    if (!n) throw new FakeApiError(404, 'NotFound', `nodes "${name}" not found`);
    return nodeFromWire(structuredClone(n));
  }

  async createNode(node: V1Node, opts?: RequestOptions): Promise<V1Node> {
    const wire = nodeToWire(node);
    const name = String((wire.metadata as JsonObject | undefined)?.name ?? '');
    this.begin('createNode', name, wire, opts);
    if (this.nodes.has(name)) throw new FakeApiError(409, 'AlreadyExists', `nodes "${name}" already exists`);
    this.stamp(wire, true);
    this.nodes.set(name, wire);
    return nodeFromWire(structuredClone(wire));
  }

  async patchNodeStatus(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    this.begin('patchNodeStatus', name, patch, opts);
    return this.applyPatch(name, patch as JsonObject, 'status');
  }

  async patchNode(name: string, patch: object, opts?: RequestOptions): Promise<V1Node> {
    this.begin('patchNode', name, patch, opts);
    return this.applyPatch(name, patch as JsonObject, 'metadata');
  }

  private applyPatch(name: string, patch: JsonObject, part: 'status' | 'metadata'): V1Node {
    const n = this.nodes.get(name);
    if (!n) throw new FakeApiError(404, 'NotFound', `nodes "${name}" not found`);
    const patched = applyStrategicMergePatch(n, patch, nodePatchSchema);
    const next = structuredClone(n);
    if (part === 'status') {
      if (patched.status !== undefined) next.status = patched.status;
      else delete next.status;
    } else {
      const meta = next.metadata as JsonObject;
      for (const k of ['labels', 'annotations']) {
        const v = (patched.metadata as JsonObject | undefined)?.[k];
        if (v === undefined) delete meta[k];
        else meta[k] = v as Json;
      }
    }
    if (JSON.stringify(next) !== JSON.stringify(n)) this.stamp(next, false);
    this.nodes.set(name, next);
    return nodeFromWire(structuredClone(next));
  }

  async getLease(namespace: string, name: string, opts?: RequestOptions): Promise<V1Lease> {
    this.begin('getLease', name, undefined, opts);
    const l = this.leases.get(`${namespace}/${name}`);
    if (!l) throw new FakeApiError(404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
    return structuredClone(l) as unknown as V1Lease;
  }

  async createLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const wire = JSON.parse(JSON.stringify(lease)) as JsonObject;
    const meta = (wire.metadata ?? {}) as JsonObject;
    const key = `${String(meta.namespace)}/${String(meta.name)}`;
    this.begin('createLease', String(meta.name), wire, opts);
    checkMicroTimes(wire);
    if (this.leases.has(key)) throw new FakeApiError(409, 'AlreadyExists', `leases.coordination.k8s.io "${String(meta.name)}" already exists`);
    this.stamp(wire, true);
    this.leases.set(key, wire);
    return structuredClone(wire) as unknown as V1Lease;
  }

  async updateLease(lease: V1Lease, opts?: RequestOptions): Promise<V1Lease> {
    const wire = JSON.parse(JSON.stringify(lease)) as JsonObject;
    const meta = (wire.metadata ?? {}) as JsonObject;
    const key = `${String(meta.namespace)}/${String(meta.name)}`;
    this.begin('updateLease', String(meta.name), wire, opts);
    checkMicroTimes(wire);
    const existing = this.leases.get(key);
    if (!existing) throw new FakeApiError(404, 'NotFound', `leases.coordination.k8s.io "${String(meta.name)}" not found`);
    const haveRv = (existing.metadata as JsonObject).resourceVersion;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== haveRv) {
      throw new FakeApiError(409, 'Conflict', `Operation cannot be fulfilled on leases.coordination.k8s.io "${String(meta.name)}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    meta.uid = (existing.metadata as JsonObject).uid;
    meta.creationTimestamp = (existing.metadata as JsonObject).creationTimestamp;
    this.stamp(wire, false);
    this.leases.set(key, wire);
    return structuredClone(wire) as unknown as V1Lease;
  }

  /** Bumps a lease's resourceVersion as another writer would, so the next PUT from a stale copy conflicts. */
  touchLease(namespace: string, name: string): void {
    const l = this.leases.get(`${namespace}/${name}`);
    if (l) this.stamp(l, false);
  }
}

const MICRO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

function checkMicroTimes(lease: JsonObject): void {
  const spec = lease.spec;
  if (!isJsonObject(spec)) return;
  for (const k of ['renewTime', 'acquireTime']) {
    const v = spec[k];
    if (v !== undefined && (typeof v !== 'string' || !MICRO.test(v))) {
      throw new FakeApiError(400, 'BadRequest', `Lease in version "v1" cannot be handled as a Lease: parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05.000000Z07:00"`);
    }
  }
}

/** A NodeStatusProvider that records calls and serves a node set by the test. */
export class FakeNodeStatusManager implements NodeStatusProvider {
  started = false;
  stopped = false;
  registered = false;
  syncs = 0;
  node: V1Node | undefined;
  /** Makes registerNode()/syncNodeStatus() reject. */
  error: Error | undefined;

  constructor(node?: V1Node) {
    this.node = node;
  }

  start(): void {
    this.started = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  async registerNode(): Promise<void> {
    if (this.error) throw this.error;
    this.registered = true;
  }

  async syncNodeStatus(): Promise<void> {
    this.syncs++;
    if (this.error) throw this.error;
    this.registered = true;
  }

  lastNode(): V1Node | undefined {
    return this.node ? structuredClone(this.node) : undefined;
  }

  isRegistered(): boolean {
    return this.registered;
  }
}

/** A NodeLease that counts renewals. */
export class FakeNodeLease implements NodeLease {
  started = false;
  stopped = false;
  syncs = 0;
  lease: V1Lease | undefined;

  start(): void {
    this.started = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  async sync(): Promise<void> {
    this.syncs++;
  }

  latestLease(): V1Lease | undefined {
    return this.lease;
  }
}
