import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { processResources, type ProcessResources } from '@kubelet-ts/core';
import type { ClusterEnv } from './cluster.js';
import { adminWireServer } from './cluster.js';

// Helpers of the fleet benchmark (bench/fleet.bench.ts): a process with its output in a file, the API server reached
// with the admin token over keep-alive connections, Prometheus counters, pod timings from one watch.

/** A process of the benchmark (the fleet, the local runtime), its stdout and stderr in `logFile`. */
export class BenchProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? null : 0);
        resolve(this.exitCode);
      }),
    );
  }

  static start(name: string, command: string, args: string[], logFile: string, env: Record<string, string> = {}): BenchProcess {
    const fd = openSync(logFile, 'a');
    writeFileSync(fd, `---- ${new Date().toISOString()} ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
    closeSync(fd);
    return new BenchProcess(name, child, logFile);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  resources(): ProcessResources {
    return processResources(this.pid);
  }

  output(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  logTail(lines = 30): string {
    return `${this.name} (pid ${this.pid}, ${this.running ? 'running' : `exited ${this.exitCode}`}), last lines of ${this.logFile}:\n${this.output().split('\n').slice(-lines).join('\n')}`;
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 60_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The pid a tools/kube component runs as ($CLUSTER_ROOT/<name>.pid), or undefined. */
export function componentPid(cluster: ClusterEnv, name: 'kube-apiserver' | 'etcd'): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(join(cluster.root, `${name}.pid`), 'utf8').trim(), 10);
    processResources(pid);
    return pid;
  } catch {
    return undefined;
  }
}

export interface ApiResponse {
  status: number;
  text: string;
}

/** The API server with the admin token over keep-alive TLS connections (at most `sockets` at once). */
export class AdminApi {
  private readonly agent: Agent;
  private readonly url: string;
  private readonly token: string;
  private readonly ca: Buffer;

  constructor(cluster: ClusterEnv, sockets = 16) {
    const server = adminWireServer(cluster);
    this.url = server.url;
    this.token = server.token;
    this.ca = readFileSync(server.caFile);
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets, ca: this.ca });
  }

  get bearer(): string {
    return this.token;
  }

  async call(method: string, path: string, body?: unknown, options: { base?: string; insecure?: boolean; accept?: string; timeoutMs?: number } = {}): Promise<ApiResponse> {
    const { base = this.url, insecure = false, accept = 'application/json', timeoutMs = 60_000 } = options;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { Accept: accept, Authorization: `Bearer ${this.token}` };
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const url = new URL(path, base);
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, agent: insecure ? undefined : this.agent, rejectUnauthorized: !insecure, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async json(method: string, path: string, body?: unknown): Promise<any> {
    const res = await this.call(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
    return JSON.parse(res.text);
  }

  /** GETs `path` of an HTTPS server with a self-signed certificate (a kubelet's), with the admin token. */
  async insecureGet(base: string, path: string): Promise<ApiResponse> {
    return this.call('GET', path, undefined, { base, insecure: true });
  }

  destroy(): void {
    this.agent.destroy();
  }
}

/** Calls `work` on every item, `concurrency` at a time. */
export async function forEachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(workers);
}

/**
 * The sum of a Prometheus counter's samples in an exposition text, optionally only those whose labels match
 * `where` (exact values), grouped by the label `by` when given.
 */
export function counterSum(text: string, name: string, where: Record<string, string> = {}, by?: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const close = line.lastIndexOf('}');
    const labelText = close > 0 ? line.slice(line.indexOf('{') + 1, close) : '';
    const value = Number(line.slice(close > 0 ? close + 1 : name.length).trim().split(' ')[0]);
    const labels = Object.fromEntries([...labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(where).some(([key, wanted]) => labels[key] !== wanted)) continue;
    const key = by ? (labels[by] ?? '') : '';
    sums.set(key, (sums.get(key) ?? 0) + value);
  }
  return sums;
}

export const total = (sums: Map<string, number>): number => [...sums.values()].reduce((a, b) => a + b, 0);

/** The API server's request counts (apiserver_request_total, watches excluded) by resource. */
export async function apiserverRequests(api: AdminApi): Promise<Map<string, number>> {
  const res = await api.call('GET', '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status} ${res.text.slice(0, 200)}`);
  const byResource = counterSum(res.text, 'apiserver_request_total', {}, 'resource');
  const watches = counterSum(res.text, 'apiserver_request_total', { verb: 'WATCH' }, 'resource');
  for (const [resource, count] of watches) byResource.set(resource, (byResource.get(resource) ?? 0) - count);
  return byResource;
}

/** Differences of two counter maps (after - before), keys of either. */
export function delta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const key of new Set([...before.keys(), ...after.keys()])) out.set(key, (after.get(key) ?? 0) - (before.get(key) ?? 0));
  return out;
}

/** The p-th percentile (0-100, nearest rank) of `values`. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const FLEET_TAINT = { key: 'kubelet-ts.io/fleet', value: 'simulated', effect: 'NoSchedule' };

/**
 * A pod of the benchmark: one simulated container, no service account token, 1 s grace, tolerating the fleet's
 * taint and `taint`; pinned to `nodeName` or left to the scheduler with `nodeSelector`.
 */
export function benchPod(name: string, namespace: string, where: { nodeName?: string; nodeSelector?: Record<string, string>; taint?: { key: string; value: string; effect: string } }): Record<string, unknown> {
  const tolerations = [FLEET_TAINT, ...(where.taint ? [where.taint] : [])].map((t) => ({ key: t.key, operator: 'Equal', value: t.value, effect: t.effect }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'fleet-bench' } },
    spec: {
      ...(where.nodeName ? { nodeName: where.nodeName } : {}),
      ...(where.nodeSelector ? { nodeSelector: where.nodeSelector } : {}),
      tolerations,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.2', imagePullPolicy: 'IfNotPresent', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
    },
  };
}

interface PodTimes {
  created?: number;
  scheduled?: number;
  running?: number;
}

/**
 * Times of every pod of a namespace as one watch sees them (performance.now() ms): `created` set by the caller when
 * its POST returns (or the first event), `scheduled` at the first event with spec.nodeName, `running` at the first
 * event with phase Running and every container running. Reconnects from the last resourceVersion.
 */
export class PodTimeline {
  readonly pods = new Map<string, PodTimes>();
  private stopped = false;
  private current: ReturnType<typeof request> | undefined;
  private resourceVersion = '';
  private buffered = '';

  constructor(
    private readonly cluster: ClusterEnv,
    private readonly api: AdminApi,
    private readonly namespace: string,
  ) {}

  async start(): Promise<void> {
    const list = await this.api.json('GET', `/api/v1/namespaces/${this.namespace}/pods?limit=1`);
    this.resourceVersion = list.metadata.resourceVersion;
    this.connect();
  }

  private connect(): void {
    if (this.stopped) return;
    const server = adminWireServer(this.cluster);
    const url = new URL(`/api/v1/namespaces/${this.namespace}/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${this.resourceVersion}`, server.url);
    this.buffered = '';
    const req = request(url, { headers: { Accept: 'application/json', Authorization: `Bearer ${server.token}` }, ca: readFileSync(server.caFile) }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        this.buffered += chunk;
        let newline: number;
        while ((newline = this.buffered.indexOf('\n')) >= 0) {
          const line = this.buffered.slice(0, newline);
          this.buffered = this.buffered.slice(newline + 1);
          if (line.trim()) this.onEvent(JSON.parse(line));
        }
      });
      res.on('end', () => setTimeout(() => this.connect(), 100));
    });
    req.on('error', () => setTimeout(() => this.connect(), 500));
    req.end();
    this.current = req;
  }

  private onEvent(event: { type: string; object: any }): void {
    const now = performance.now();
    if (event.type === 'ERROR') {
      // 410 Gone: start over from now (the times already seen stay)
      this.resourceVersion = '';
      return;
    }
    const pod = event.object;
    if (pod?.metadata?.resourceVersion) this.resourceVersion = pod.metadata.resourceVersion;
    if (event.type === 'BOOKMARK' || event.type === 'DELETED') return;
    const times = this.entry(pod.metadata.name);
    times.created ??= now;
    if (pod.spec?.nodeName) times.scheduled ??= now;
    const statuses: any[] = pod.status?.containerStatuses ?? [];
    if (pod.status?.phase === 'Running' && statuses.length > 0 && statuses.every((s) => s.state?.running)) times.running ??= now;
  }

  private entry(name: string): PodTimes {
    let times = this.pods.get(name);
    if (!times) this.pods.set(name, (times = {}));
    return times;
  }

  /** Records a pod's creation (its POST answered). */
  created(name: string, at: number): void {
    const times = this.entry(name);
    times.created = Math.min(times.created ?? at, at);
  }

  runningCount(): number {
    let count = 0;
    for (const times of this.pods.values()) if (times.running !== undefined) count++;
    return count;
  }

  runningCountOf(prefix: string): number {
    let count = 0;
    for (const [name, times] of this.pods) if (name.startsWith(prefix) && times.running !== undefined) count++;
    return count;
  }

  /**
   * Scheduled -> Running and created -> Running latencies (ms) of the pods (whose name starts with `prefix`) seen
   * Running; first scheduled, last Running.
   */
  summary(prefix = ''): { scheduledToRunning: number[]; createdToRunning: number[]; firstScheduled: number; lastRunning: number } {
    const scheduledToRunning: number[] = [];
    const createdToRunning: number[] = [];
    let firstScheduled = Number.POSITIVE_INFINITY;
    let lastRunning = 0;
    for (const [name, times] of this.pods) {
      if (!name.startsWith(prefix)) continue;
      if (times.scheduled !== undefined) firstScheduled = Math.min(firstScheduled, times.scheduled);
      if (times.running === undefined) continue;
      lastRunning = Math.max(lastRunning, times.running);
      if (times.scheduled !== undefined) scheduledToRunning.push(times.running - times.scheduled);
      if (times.created !== undefined) createdToRunning.push(times.running - times.created);
    }
    return { scheduledToRunning, createdToRunning, firstScheduled, lastRunning };
  }

  stop(): void {
    this.stopped = true;
    this.current?.destroy();
  }
}

/**
 * Nodes with `label` and how many of them are Ready, from the API server's Table of nodes (kubectl's STATUS column,
 * without the objects: a poll of 1,000 nodes stays small).
 */
export async function readyNodes(api: AdminApi, labelSelector: string): Promise<{ total: number; ready: number; names: string[] }> {
  const res = await api.call('GET', `/api/v1/nodes?includeObject=None&labelSelector=${encodeURIComponent(labelSelector)}`, undefined, {
    accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
  });
  if (res.status !== 200) throw new Error(`listing nodes: ${res.status} ${res.text.slice(0, 200)}`);
  const table = JSON.parse(res.text) as { columnDefinitions: Array<{ name: string }>; rows?: Array<{ cells: unknown[] }> };
  const status = table.columnDefinitions.findIndex((column) => column.name === 'Status');
  const name = table.columnDefinitions.findIndex((column) => column.name === 'Name');
  const rows = table.rows ?? [];
  const ready = rows.filter((row) => String(row.cells[status]).split(',').includes('Ready')).length;
  return { total: rows.length, ready, names: rows.map((row) => String(row.cells[name])) };
}
