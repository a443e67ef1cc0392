import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './cluster.js';

const execFileAsync = promisify(execFile);

/** The env tools/systemd-node/start.sh prints (and writes to $ROOT/env). */
export interface SystemdNodeEnv {
  root: string;
  /** The node's name: the container's machine name and hostname. */
  name: string;
  /** The booted systemd's pid on the host. */
  pid: number;
  /** The container's cgroup-namespace root in every hierarchy on the host, e.g. /kts-systemd-node. */
  cgroup: string;
  /** The node's address (its InternalIP) on the veth to the host. */
  ip: string;
  cgroupDriver: 'systemd' | 'cgroupfs';
  podCidr: string;
  busyboxImage: string;
  pauseImage: string;
}

async function script(name: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync('bash', [join(repoRoot, 'tools/systemd-node', name), ...args], {
      maxBuffer: 16 << 20,
      env: { ...process.env, ...env },
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`tools/systemd-node/${name} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/**
 * A node booted by tools/systemd-node: a real systemd (systemd-nspawn) running containerd as a service, joined to the
 * control plane by join.sh with kubeadm's files. Commands run inside with nsenter; files are read through
 * /proc/<pid>/root, so cgroup paths are the node's own (its cgroup namespace), as an operator on the node sees them.
 */
export class SystemdNode {
  private constructor(readonly env: SystemdNodeEnv) {}

  /** Boots the node (idempotent: an already booted one is reused) with containerd on `cgroupDriver`. */
  static async start(cgroupDriver: 'systemd' | 'cgroupfs'): Promise<SystemdNode> {
    const values = parseEnv(await script('start.sh', [], { KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER: cgroupDriver }));
    for (const key of ['SYSTEMD_NODE_ROOT', 'SYSTEMD_NODE_NAME', 'SYSTEMD_NODE_PID', 'SYSTEMD_NODE_CGROUP', 'SYSTEMD_NODE_IP', 'SYSTEMD_NODE_CGROUP_DRIVER']) {
      if (!values[key]) throw new Error(`tools/systemd-node/start.sh printed no ${key}`);
    }
    if (values.SYSTEMD_NODE_CGROUP_DRIVER !== cgroupDriver) {
      throw new Error(`the booted node runs containerd with the ${values.SYSTEMD_NODE_CGROUP_DRIVER} driver, not ${cgroupDriver}: run tools/systemd-node/stop.sh first`);
    }
    return new SystemdNode({
      root: values.SYSTEMD_NODE_ROOT,
      name: values.SYSTEMD_NODE_NAME,
      pid: Number(values.SYSTEMD_NODE_PID),
      cgroup: values.SYSTEMD_NODE_CGROUP,
      ip: values.SYSTEMD_NODE_IP,
      cgroupDriver,
      podCidr: values.SYSTEMD_NODE_POD_CIDR ?? '',
      busyboxImage: values.BUSYBOX_IMAGE ?? 'localhost/kubelet-ts/busybox:1',
      pauseImage: values.PAUSE_IMAGE ?? 'localhost/kubelet-ts/pause:3.9',
    });
  }

  /** Powers the node off and removes everything start.sh made. */
  static async stop(): Promise<void> {
    await script('stop.sh', []);
  }

  /** kubeadm's files with this token (and extra kubelet flags in /etc/default/kubelet), then the kubelet unit (re)started. */
  async join(token: string, extraArgs: string[] = []): Promise<void> {
    await script('join.sh', ['--token', token, ...(extraArgs.length > 0 ? ['--extra-args', extraArgs.join(' ')] : [])], {
      KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER: this.env.cgroupDriver,
    });
  }

  /** A command inside the node (all its namespaces); its stdout. */
  async run(args: string[]): Promise<string> {
    try {
      const { stdout } = await execFileAsync('nsenter', ['-t', String(this.env.pid), '-a', ...args], { maxBuffer: 16 << 20 });
      return stdout;
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      throw new Error(`inside ${this.env.name}: ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
    }
  }

  /** `systemctl show UNIT -p ...` as a map. A unit systemd does not know shows LoadState=not-found. */
  async unit(unit: string, properties = ['LoadState', 'ActiveState', 'SubState']): Promise<Record<string, string>> {
    const out = await this.run(['systemctl', 'show', unit, ...properties.flatMap((p) => ['-p', p])]);
    return Object.fromEntries(
      out
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }

  /** A file inside the node, e.g. /sys/fs/cgroup/memory/kubepods.slice/memory.limit_in_bytes. */
  readFile(path: string): string {
    return readFileSync(join(`/proc/${this.env.pid}/root`, path), 'utf8');
  }

  /** The journal of a unit inside the node, for failure messages. */
  async journal(unit: string, lines = 60): Promise<string> {
    return this.run(['journalctl', '-u', unit, '--no-pager', '-n', String(lines)]).catch((error: Error) => error.message);
  }
}
