import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods, type ContainerdEnv } from '@kubelet-ts/cri-conformance';
import {
  adminWireServer,
  ensureCluster,
  Kubectl,
  KubeletProcess,
  nodeKubeconfig,
  ourCgroupRoot,
  repoRoot,
  unmountAndRemove,
  wire,
  type ClusterEnv,
  type KubeObject,
  type WireServer,
} from '@kubelet-ts/cluster-e2e';

const execFileAsync = promisify(execFile);

/** The preloaded counter of the process's API requests by verb and resource (tools/cluster-e2e's, shared with the fleet bench). */
const REQUEST_COUNTER = join(repoRoot, 'tools/cluster-e2e/bench/fleet-request-counter.mjs');

export interface ChaosNodeOptions {
  /** The node's name; its pods live in namespace `<node>`. */
  node: string;
  /** The CRI endpoint the kubelet is given (a CriChaosProxy's, for instance); default containerd's own. */
  runtimeEndpoint?: string;
  /** More kubelet flags. */
  extraArgs?: string[];
  /** More environment for the kubelet process. */
  env?: Record<string, string>;
  /** The kubelet's healthz port (default 10248 + a per-node offset is left to the caller; 0 would disable it). */
  healthzPort?: number;
  /** The kubelet's read-only port (/metrics without authentication, for the soak's samples); default 0, off. */
  readOnlyPort?: number;
  /** Port of the preloaded API request counter (JSON on 127.0.0.1). */
  requestCounterPort?: number;
  /**
   * Called once the node's scratch directory exists and before the first kubelet starts: e.g. mount a small
   * filesystem on `<dir>/root` (the kubelet's --root-dir) or `<dir>/pod-logs`. destroy() unmounts what is under dir.
   */
  prepareDir?(dir: string): Promise<void>;
  /** Called after every kubelet start with the new process (e.g. to move it into a memory cgroup). */
  onStart?(kubelet: KubeletProcess): Promise<void>;
}

export type RequestCounts = Record<string, number>;

/**
 * One node under test: our kubelet (the built binary, as an operator runs it) on the real containerd, registered with
 * the real control plane, in a scratch directory and cgroup root of its own. The scenarios kill it, restart it, or
 * take the runtime and the API server away from it; the invariant checks read containerd, the mounts and the cgroups
 * directly, not through the kubelet.
 */
export class ChaosNode {
  kubelet!: KubeletProcess;
  /** Every kubelet process started for this node, oldest first (a scenario that kills it starts several). */
  readonly generations: KubeletProcess[] = [];

  private constructor(
    readonly options: ChaosNodeOptions,
    readonly cluster: ClusterEnv,
    readonly kubectl: Kubectl,
    readonly containerd: ContainerdEnv,
    /** containerd itself, never through a proxy: what the invariants compare the API with. */
    readonly runtime: RemoteRuntimeService,
    readonly dir: string,
    private readonly kubeconfig: string,
  ) {}

  static async create(options: ChaosNodeOptions): Promise<ChaosNode> {
    const containerd = readContainerdEnv();
    const cluster = await ensureCluster();
    const kubectl = new Kubectl(cluster);
    const dir = mkdtempSync(join(containerd.root, `chaos-${options.node}-`));
    mkdirSync(dir, { recursive: true });
    const kubeconfig = await nodeKubeconfig(options.node);
    const node = new ChaosNode(options, cluster, kubectl, containerd, new RemoteRuntimeService({ endpoint: containerd.endpoint }), dir, kubeconfig);
    await options.prepareDir?.(dir);
    await kubectl.run(['create', 'namespace', node.namespace]).catch((error: Error) => {
      if (!/AlreadyExists/.test(error.message)) throw error;
    });
    return node;
  }

  get name(): string {
    return this.options.node;
  }

  /** The namespace of the node's workloads. */
  get namespace(): string {
    return this.options.node;
  }

  get rootDir(): string {
    return join(this.dir, 'root');
  }

  get cgroupRoot(): string {
    return ourCgroupRoot(this.options.node);
  }

  get healthzPort(): number {
    return this.options.healthzPort ?? 10248;
  }

  /**
   * A GET on the API server with the admin token: the object, or undefined for 404. The frequent reads of the
   * scenarios go this way, not through a kubectl process per read (which cost more CPU than the kubelet under test).
   */
  async get(path: string): Promise<KubeObject | undefined> {
    return apiGet(this.api, path);
  }

  private get api(): WireServer {
    this.wireServer ??= adminWireServer(this.cluster);
    return this.wireServer;
  }

  private wireServer?: WireServer;

  /** Starts a kubelet for the node (a new generation); the previous one must have exited. */
  async start(): Promise<KubeletProcess> {
    if (this.kubelet?.running) throw new Error(`the kubelet of ${this.name} (pid ${this.kubelet.pid}) still runs`);
    // NODE_OPTIONS, not node flags: the binary then starts through its shebang, with the V8 settings it ships with.
    const counterEnv: Record<string, string> = this.options.requestCounterPort
      ? { NODE_OPTIONS: `--import=${REQUEST_COUNTER}`, FLEET_COUNT_API: new URL(this.cluster.server).host, FLEET_COUNT_PORT: String(this.options.requestCounterPort) }
      : {};
    this.kubelet = await KubeletProcess.startOurs({
      node: this.name,
      kubeconfig: this.kubeconfig,
      runtimeEndpoint: this.options.runtimeEndpoint ?? this.containerd.endpoint,
      dir: this.dir,
      extraArgs: [`--healthz-port=${this.healthzPort}`, '--port=0', `--read-only-port=${this.options.readOnlyPort ?? 0}`, ...(this.options.extraArgs ?? [])],
      env: { ...counterEnv, ...(this.options.env ?? {}) },
    });
    this.generations.push(this.kubelet);
    recordKubelet(this.kubelet);
    await this.options.onStart?.(this.kubelet);
    return this.kubelet;
  }

  /** `GET /healthz` on the kubelet's healthz port: undefined when it does not answer. */
  async healthz(): Promise<{ status: number; body: string } | undefined> {
    return httpGet(`http://127.0.0.1:${this.healthzPort}/healthz?verbose`);
  }

  /** The kubelet's /metrics (Prometheus text) on its read-only port, or undefined when it does not answer. */
  async metrics(): Promise<string | undefined> {
    if (!this.options.readOnlyPort) throw new Error(`${this.name} has no read-only port: give ChaosNodeOptions.readOnlyPort`);
    const answer = await httpGet(`http://127.0.0.1:${this.options.readOnlyPort}/metrics`);
    return answer?.status === 200 ? answer.body : undefined;
  }

  /** The API requests the current kubelet made so far, by `VERB resource` (needs requestCounterPort). */
  async requestCounts(): Promise<RequestCounts | undefined> {
    if (!this.options.requestCounterPort) return undefined;
    const answer = await httpGet(`http://127.0.0.1:${this.options.requestCounterPort}/`);
    return answer?.status === 200 ? (JSON.parse(answer.body) as RequestCounts) : undefined;
  }

  /** The kubelet's log lines that look like errors, for a scenario's report. */
  errorLines(generation = this.kubelet): string[] {
    return generation.output().split('\n').filter((line) => /\b(error|E\d{4}|panic|Unhandled|uncaught)\b/i.test(line));
  }

  /** Removes the node, its namespace, its containers, its cgroup root and its directory. */
  async destroy(): Promise<void> {
    await this.kubelet?.stop().catch(() => undefined);
    await this.kubectl.run(['delete', 'namespace', this.namespace, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await this.kubectl.run(['delete', 'node', this.name, '--ignore-not-found']).catch(() => undefined);
    await removeRuntimePods(this.containerd.endpoint, (pod) => pod.namespace === this.namespace).catch(() => undefined);
    await removeHostCgroup(this.cgroupRoot).catch(() => undefined);
    this.runtime.close();
    if (process.env.KUBELET_CHAOS_KEEP) console.error(`kept ${this.dir}`);
    else unmountAndRemove(this.dir);
  }
}

/** A GET on the API server: the object, undefined for 404, an error naming the status otherwise. */
export async function apiGet(server: WireServer, path: string): Promise<KubeObject | undefined> {
  const response = await wire(server, 'GET', path);
  if (response.status === 404) return undefined;
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${typeof response.body === 'object' ? response.body?.message : String(response.body).slice(0, 200)}`);
  return response.body as KubeObject;
}

function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** The containerd daemon's pid (tools/containerd's pid file), or undefined when it is not running. */
export function containerdPid(containerd: ContainerdEnv): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(join(containerd.root, 'containerd.pid'), 'utf8'), 10);
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Runs one of tools/containerd's scripts. */
export async function containerdTool(script: 'start.sh' | 'restart.sh' | 'stop.sh'): Promise<void> {
  await execFileAsync('bash', [join(repoRoot, 'tools/containerd', script)], { maxBuffer: 16 << 20 });
}

/** The lock this process holds, where the kubelets it starts are recorded. */
let heldLock: string | undefined;
const startedKubelets = new Set<number>();

/**
 * Our kubelets die with this process: a test runner that times a test out kills the test process, and an orphaned
 * kubelet would go on stopping the pods of the next scenario's node on the same containerd.
 */
process.once('exit', () => {
  for (const pid of startedKubelets) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

function recordKubelet(kubelet: KubeletProcess): void {
  const pid = kubelet.pid;
  startedKubelets.add(pid);
  void kubelet.exited.then(() => startedKubelets.delete(pid));
  if (heldLock) appendFileSync(join(heldLock, 'kubelets'), `${pid}\n`);
}

/** Kills the kubelets a dead lock holder started (SIGKILLed, it could not). */
function killOrphanedKubelets(lock: string, log: (line: string) => void): void {
  let pids: number[] = [];
  try {
    pids = readFileSync(join(lock, 'kubelets'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return;
  }
  for (const pid of pids) {
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone
    }
    if (!command.includes('kubelet')) continue; // the pid was reused
    log(`killing kubelet pid ${pid}, left running by a dead chaos run`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * One kubelet on a containerd at a time: a kubelet owns its runtime and kills the pods it does not know (Go's
 * HandlePodCleanups does the same), so two nodes on one containerd stop each other's pods. A scenario (or the soak)
 * holds this lock, a directory under the containerd root with the holder's pid, for its whole run; the next one
 * waits. A holder that died leaves a stale lock, which is taken over.
 */
export async function acquireRuntimeLock(containerd: ContainerdEnv, owner: string, log: (line: string) => void = () => undefined): Promise<() => void> {
  const dir = join(containerd.root, 'chaos.lock');
  let announced = false;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'owner'), `${process.pid} ${owner}\n`);
      heldLock = dir;
      return () => {
        heldLock = undefined;
        rmSync(dir, { recursive: true, force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = '';
    try {
      holder = readFileSync(join(dir, 'owner'), 'utf8').trim();
    } catch {
      // being written or removed: look again
    }
    const pid = Number.parseInt(holder, 10);
    if (holder && !processAlive(pid)) {
      killOrphanedKubelets(dir, log);
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (!announced && holder) {
      log(`${owner}: waiting for ${dir} (held by pid ${holder}): one kubelet per containerd, or they stop each other's pods`);
      announced = true;
    }
    await sleep(2000);
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
