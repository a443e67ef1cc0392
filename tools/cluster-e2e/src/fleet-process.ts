import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { processResources, type ProcessResources } from '@kubelet-ts/core';
import { repoRoot, type ClusterEnv, type Kubectl } from './cluster.js';
import { waitFor } from './wait.js';

/** A node group of a --fleet-config file. */
export interface FleetGroup {
  name: string;
  count: number;
  cpu?: string;
  memory?: string;
  pods?: number;
  labels?: Record<string, string>;
  /** `key=value:Effect` */
  taints?: string[];
}

export interface FleetOptions {
  /** A kubeconfig whose identity may act for every node of the fleet (see fleetKubeconfig). */
  kubeconfig: string;
  /** A scratch directory: the fleet's log, its --fleet-config file and (unless rootDir) its --fleet-root-dir. */
  dir: string;
  /** --nodes (ignored by the fleet when `groups` is given). */
  nodes?: number;
  /** Written to `<dir>/fleet-config.json` and passed as --fleet-config. */
  groups?: FleetGroup[];
  /** --node-name-prefix */
  prefix?: string;
  /** --fleet-root-dir; default `<dir>/root`. */
  rootDir?: string;
  /** --fleet-base-port */
  basePort?: number;
  /** --fleet-control-port (0 turns the control API off). */
  controlPort: number;
  /** Any other flag (kubelet flags apply to every node). */
  extraArgs?: string[];
}

/** A node as the fleet's control API lists it (GET /nodes). */
export interface FleetNode {
  name: string;
  state: 'running' | 'dead';
  port: number;
}

/**
 * `kubelet fleet`: N kubelets in one process (apps/kubelet/dist/kubelet.mjs, the bundle, as an operator runs it),
 * its stdout and stderr in `<dir>/fleet.log`. start() resolves once it prints `fleet: N nodes started`; the control
 * API on 127.0.0.1:<controlPort> lists, kills and revives nodes.
 */
export class FleetProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly logFile: string,
    private readonly logOffset: number,
    readonly controlPort: number,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? null : 0);
        resolve(this.exitCode);
      }),
    );
  }

  /** Starts the fleet and waits (up to `timeoutMs`) for its `fleet: N nodes started` line; N is returned in `started`. */
  static async start(options: FleetOptions, timeoutMs = 120_000): Promise<FleetProcess> {
    mkdirSync(options.dir, { recursive: true });
    const args = ['fleet', `--kubeconfig=${options.kubeconfig}`, `--fleet-root-dir=${options.rootDir ?? join(options.dir, 'root')}`, `--fleet-control-port=${options.controlPort}`];
    if (options.groups) {
      const file = join(options.dir, 'fleet-config.json');
      writeFileSync(file, JSON.stringify({ groups: options.groups }, null, 2));
      args.push(`--fleet-config=${file}`);
    } else if (options.nodes !== undefined) {
      args.push(`--nodes=${options.nodes}`);
    }
    if (options.prefix) args.push(`--node-name-prefix=${options.prefix}`);
    if (options.basePort !== undefined) args.push(`--fleet-base-port=${options.basePort}`);
    args.push(...(options.extraArgs ?? []));

    const bin = process.env.KUBELET_TS_BIN ?? join(repoRoot, 'apps/kubelet/dist/kubelet.mjs');
    const logFile = join(options.dir, 'fleet.log');
    const logOffset = existsSync(logFile) ? statSync(logFile).size : 0;
    const fd = openSync(logFile, 'a');
    writeFileSync(fd, `---- ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
    const child = spawn(bin, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const fleet = new FleetProcess(child, logFile, logOffset, options.controlPort);
    const expected = options.groups ? options.groups.reduce((sum, group) => sum + group.count, 0) : options.nodes;
    try {
      await waitFor(
        '`fleet: N nodes started`',
        async () => {
          if (!fleet.running) throw new Error(`the fleet exited with ${fleet.exitCode}`);
          return fleet.started;
        },
        timeoutMs,
        () => fleet.logTail(),
      );
    } catch (error) {
      await fleet.stop(5_000);
      throw error;
    }
    if (expected !== undefined && fleet.started !== expected) {
      await fleet.stop(5_000);
      throw new Error(`the fleet says ${fleet.started} nodes started, not ${expected}\n${fleet.logTail()}`);
    }
    return fleet;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** N of the `fleet: N nodes started[ (M failed; see the log)] in Xs` line, once printed. */
  get started(): number | undefined {
    const match = /^fleet: (\d+) nodes started\b/m.exec(this.output());
    return match ? Number(match[1]) : undefined;
  }

  resources(): ProcessResources {
    return processResources(this.pid);
  }

  /** GET /nodes of the control API. */
  async nodes(): Promise<FleetNode[]> {
    return JSON.parse(await this.control('GET', '/nodes')) as FleetNode[];
  }

  /** POST /nodes/<name>/kill: the node's kubelet stops at once; its pods stay. */
  async killNode(name: string): Promise<void> {
    await this.control('POST', `/nodes/${encodeURIComponent(name)}/kill`);
  }

  /** POST /nodes/<name>/revive: the node's kubelet starts again and adopts its pods. */
  async reviveNode(name: string): Promise<void> {
    await this.control('POST', `/nodes/${encodeURIComponent(name)}/revive`);
  }

  /** A request to the control API; rejects unless it answers 2xx. */
  control(method: 'GET' | 'POST', path: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: this.controlPort, method, path, timeout: 30_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(body);
          else reject(new Error(`${method} ${path} on the fleet's control port: ${status} ${body.trim()}`));
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} on the fleet's control port timed out`)));
      req.on('error', reject);
      req.end();
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited within `timeoutMs`. Resolves with the exit code. */
  async stop(timeoutMs = 30_000): Promise<number | null> {
    if (!this.running) return this.exitCode ?? null;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** What the fleet has written (stdout and stderr) so far. */
  output(): string {
    try {
      return readFileSync(this.logFile).subarray(this.logOffset).toString('utf8');
    } catch {
      return '';
    }
  }

  /** The last lines of the fleet's output, for failure messages. */
  logTail(lines = 40): string {
    return `kubelet fleet (pid ${this.pid}, ${this.running ? 'running' : `exited ${this.exitCode}`}), last lines of ${this.logFile}:\n${this.output().split('\n').slice(-lines).join('\n')}`;
  }
}

/**
 * A kubeconfig for a fleet: one identity acting for many nodes, which the Node authorizer (it allows a
 * `system:node:<name>` user only its own node) cannot be. A dedicated service account, `kube-system/<name>`, bound to
 * the `system:node` ClusterRole (what RBAC grants kubelets), with its token. Written to `file`; returns it.
 */
export async function fleetKubeconfig(kubectl: Kubectl, cluster: ClusterEnv, file: string, name = 'kubelet-ts-fleet'): Promise<string> {
  await kubectl.apply(
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node' },
      subjects: [{ kind: 'ServiceAccount', name, namespace: 'kube-system' }],
    },
  );
  // v1.20's token controller makes the account's token secret.
  const secretName = await waitFor(`the token secret of kube-system/${name}`, async () => {
    const account = await kubectl.getOrUndefined(['serviceaccount', '-n', 'kube-system', name]);
    return (account?.secrets as { name: string }[] | undefined)?.[0]?.name;
  });
  const secret = await kubectl.json(['get', 'secret', '-n', 'kube-system', secretName]);
  const token = Buffer.from(secret.data.token as string, 'base64').toString('utf8');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'kubelet-ts', cluster: { server: cluster.server, 'certificate-authority': cluster.caFile } }],
      users: [{ name, user: { token } }],
      contexts: [{ name: `${name}@kubelet-ts`, context: { cluster: 'kubelet-ts', user: name } }],
      'current-context': `${name}@kubelet-ts`,
    }),
    { mode: 0o600 },
  );
  return file;
}
