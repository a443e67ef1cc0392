import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processResources, type ProcessResources } from '@kubelet-ts/core';
import { ensureHostCgroup } from '@kubelet-ts/container-manager/testing';
import { repoRoot, type ClusterEnv } from './cluster.js';

export interface NodeAgentOptions {
  /** The node name (--hostname-override). */
  node: string;
  /** A node kubeconfig (tools/kube/node-kubeconfig.sh). */
  kubeconfig: string;
  /** The CRI endpoint, e.g. unix:///tmp/kubelet-ts-containerd/containerd.sock; '' leaves it to the kubelet's default (ours only). */
  runtimeEndpoint: string;
  /** A scratch directory for the kubelet's root dir, pod logs and its own log. */
  dir: string;
  staticPodPath?: string;
  extraArgs?: string[];
  /** Extra environment for the kubelet process (e.g. LD_PRELOAD of libfaketime); merged over this process's. */
  env?: Record<string, string>;
  /** Node.js flags for our kubelet (e.g. `--import=<a preloaded counter>`), as KUBELET_TS_NODE_ARGS gives for every kubelet. */
  nodeArgs?: string[];
}

/** The --cgroup-root our kubelet gets for a node unless a test names one. */
export function ourCgroupRoot(node: string): string {
  return `/kts-${node}`;
}

/** A kubelet (ours or Go's) running as its own process, its output in `<dir>/kubelet.log`. */
export class KubeletProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly kind: 'kubelet-ts' | 'go-kubelet',
    private readonly child: ChildProcess,
    readonly logFile: string,
    private readonly logOffset: number,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? null : 0);
        resolve(this.exitCode);
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /**
   * Our kubelet: the built binary (apps/kubelet/dist/kubelet.mjs, the bundle, run through its shebang with its V8
   * settings), as an operator runs it. Its
   * `--cgroup-root` (the test's own, or ourCgroupRoot(node)) is made first: the kubelet refuses a missing one, as Go's
   * does. The root outlives stop(), which leaves the pods running; a test's teardown removes it (removeHostCgroup).
   */
  static async startOurs(options: NodeAgentOptions): Promise<KubeletProcess> {
    const given = options.extraArgs?.find((arg) => arg.startsWith('--cgroup-root='));
    // Each node's pods in a cgroup root of its own: kubelets sharing one kubepods would take each other's pod
    // cgroups for orphans (and so would Go's kubelet, whose kubepods is the host's /kubepods).
    const cgroupRoot = given ? given.slice('--cgroup-root='.length) : ourCgroupRoot(options.node);
    await ensureHostCgroup(cgroupRoot);
    const args = [
      `--kubeconfig=${options.kubeconfig}`,
      ...(options.runtimeEndpoint ? [`--container-runtime-endpoint=${options.runtimeEndpoint}`] : []),
      `--hostname-override=${options.node}`,
      `--root-dir=${join(options.dir, 'root')}`,
      `--pod-logs-dir=${join(options.dir, 'pod-logs')}`,
      ...(options.staticPodPath ? [`--pod-manifest-path=${options.staticPodPath}`] : []),
      ...(given ? [] : [`--cgroup-root=${cgroupRoot}`]),
      ...(options.extraArgs ?? []),
    ];
    // KUBELET_TS_BIN: another build of ours, e.g. the unbundled dist/main.js, whose CPU profiles keep function names;
    // KUBELET_TS_NODE_ARGS: node flags for it (`--cpu-prof --cpu-prof-dir=...`, which NODE_OPTIONS refuses).
    const bin = process.env.KUBELET_TS_BIN ?? join(repoRoot, 'apps/kubelet/dist/kubelet.mjs');
    const nodeArgs = [...(process.env.KUBELET_TS_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...(options.nodeArgs ?? [])];
    if (nodeArgs.length > 0) return KubeletProcess.spawn('kubelet-ts', process.execPath, [...nodeArgs, bin, ...args], options.dir, options.env);
    return KubeletProcess.spawn('kubelet-ts', bin, args, options.dir, options.env);
  }

  /**
   * The Go kubelet v1.20.2 from the same build, with what it needs on this machine kind: CRI over
   * `--container-runtime=remote`, cgroupfs, no swap check; and the API rates given to ours.
   */
  static startGo(options: NodeAgentOptions, cluster: ClusterEnv): KubeletProcess {
    const root = join(options.dir, 'root');
    mkdirSync(root, { recursive: true });
    const config = join(options.dir, 'kubelet-config.json');
    writeFileSync(
      config,
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        cgroupDriver: 'cgroupfs',
        failSwapOn: false,
        kubeAPIQPS: 50,
        kubeAPIBurst: 100,
        eventRecordQPS: 50,
        eventBurst: 100,
        authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: cluster.caFile } },
        authorization: { mode: 'Webhook' },
        ...(options.staticPodPath ? { staticPodPath: options.staticPodPath } : {}),
      }),
    );
    const args = [
      `--config=${config}`,
      `--kubeconfig=${options.kubeconfig}`,
      '--container-runtime=remote',
      `--container-runtime-endpoint=${options.runtimeEndpoint}`,
      `--hostname-override=${options.node}`,
      `--root-dir=${root}`,
      `--cert-dir=${join(options.dir, 'pki')}`,
      '--v=1',
      ...(options.extraArgs ?? []),
    ];
    return KubeletProcess.spawn('go-kubelet', join(cluster.binDir, 'kubelet'), args, options.dir);
  }

  private static spawn(kind: KubeletProcess['kind'], command: string, args: string[], dir: string, env?: Record<string, string>): KubeletProcess {
    mkdirSync(dir, { recursive: true });
    const logFile = join(dir, 'kubelet.log');
    const logOffset = existsSync(logFile) ? statSync(logFile).size : 0;
    const fd = openSync(logFile, 'a');
    writeFileSync(fd, `---- ${new Date().toISOString()} ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, { stdio: ['ignore', fd, fd], ...(env ? { env: { ...process.env, ...env } } : {}) });
    closeSync(fd);
    return new KubeletProcess(kind, child, logFile, logOffset);
  }

  resources(): ProcessResources {
    return processResources(this.pid);
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

  /** SIGKILL: the process gets no chance to clean up, as when a node agent crashes. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** What this process has written (its stdout and stderr) so far. */
  output(): string {
    try {
      return readFileSync(this.logFile).subarray(this.logOffset).toString('utf8');
    } catch {
      return '';
    }
  }

  /** The last lines of this process's output, for failure messages. */
  logTail(lines = 40): string {
    return `${this.kind} (pid ${this.pid}, ${this.running ? 'running' : `exited ${this.exitCode}`}), last lines of ${this.logFile}:\n${this.output().split('\n').slice(-lines).join('\n')}`;
  }
}
