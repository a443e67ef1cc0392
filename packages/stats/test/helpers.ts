// Shared fixtures: fake cgroup and /proc trees in a temp dir, and a small CRI fake whose stats the test sets.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { criError } from '@kubelet-ts/cri-client';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import type { StatsRuntimeService } from '../src/index.js';

export const GiB = 1024 ** 3;
export const MiB = 1024 ** 2;

/** A temp dir removed when the test ends. */
export function tempDir(t: { teardown(fn: () => void): void }, prefix = 'kts-stats-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function writeFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

export interface CgroupFigures {
  cpuUsageNanos?: number;
  usageBytes?: number;
  inactiveFileBytes?: number;
  rssBytes?: number;
  pgfault?: number;
  pgmajfault?: number;
  limitBytes?: number;
}

/** Writes a cgroup v1 cgroup (cpuacct + memory controllers) at `cgroup` under root. */
export function writeCgroupV1(root: string, cgroup: string, f: CgroupFigures, cpuDir = 'cpuacct'): void {
  if (f.cpuUsageNanos !== undefined) writeFile(join(root, cpuDir, cgroup, 'cpuacct.usage'), `${f.cpuUsageNanos}\n`);
  const memDir = join(root, 'memory', cgroup);
  if (f.usageBytes !== undefined) writeFile(join(memDir, 'memory.usage_in_bytes'), `${f.usageBytes}\n`);
  writeFile(
    join(memDir, 'memory.stat'),
    [
      `cache 1`,
      `rss 2`,
      `pgfault ${f.pgfault ?? 0}`,
      `pgmajfault ${f.pgmajfault ?? 0}`,
      `inactive_file 3`,
      `total_rss ${f.rssBytes ?? 0}`,
      `total_pgfault 999999`,
      `total_inactive_file ${f.inactiveFileBytes ?? 0}`,
      '',
    ].join('\n'),
  );
  writeFile(join(memDir, 'memory.limit_in_bytes'), `${f.limitBytes ?? 9223372036854771712}\n`);
}

/** Writes a cgroup v2 cgroup; the root gets cgroup.controllers (what makes the tree v2). */
export function writeCgroupV2(root: string, cgroup: string, f: CgroupFigures, opts: { memoryCurrent?: boolean } = {}): void {
  const dir = join(root, cgroup);
  writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  if (f.cpuUsageNanos !== undefined) {
    writeFile(join(dir, 'cpu.stat'), `usage_usec ${f.cpuUsageNanos / 1000}\nuser_usec 1\nsystem_usec 2\n`);
  }
  if (opts.memoryCurrent !== false && f.usageBytes !== undefined) writeFile(join(dir, 'memory.current'), `${f.usageBytes}\n`);
  writeFile(
    join(dir, 'memory.stat'),
    `anon ${f.rssBytes ?? 0}\nfile 5\ninactive_file ${f.inactiveFileBytes ?? 0}\npgfault ${f.pgfault ?? 0}\npgmajfault ${f.pgmajfault ?? 0}\n`,
  );
  if (cgroup !== '/') writeFile(join(dir, 'memory.max'), f.limitBytes !== undefined ? `${f.limitBytes}\n` : 'max\n');
}

export const NET_DEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 5000      50    0    0    0     0          0         0     5000      50    0    0    0     0       0          0
  eth0: 1000      10    1    0    0     0          0         0     2000      20    2    0    0     0       0          0
  eth1: 3000      30    0    0    0     0          0         0     4000      40    0    0    0     0       0          0
vethabc: 7000     70    0    0    0     0          0         0     8000      80    0    0    0     0       0          0
`;

export const NET_ROUTE = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth1	0000A8C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
eth1	00000000	0100A8C0	0003	0	0	0	00000000	0	0	0
`;

/** A fake /proc: meminfo, stat (btime), pid limits, loadavg, net/dev, net/route. */
export function writeProc(root: string, opts: { memTotalKb?: number; memFreeKb?: number; btime?: number; loadavg?: string | null } = {}): void {
  writeFile(join(root, 'meminfo'), `MemTotal:       ${opts.memTotalKb ?? 4 * 1024 * 1024} kB\nMemFree:         ${opts.memFreeKb ?? 1024 * 1024} kB\nHugePages_Total:       0\n`);
  writeFile(join(root, 'stat'), `cpu  1 2 3 4\nintr 1\nbtime ${opts.btime ?? 1767225600}\nprocesses 100\n`);
  writeFile(join(root, 'sys/kernel/pid_max'), '4194304\n');
  writeFile(join(root, 'sys/kernel/threads-max'), '63336\n');
  if (opts.loadavg !== null) writeFile(join(root, 'loadavg'), opts.loadavg ?? '0.10 0.20 0.30 2/345 6789\n');
  writeFile(join(root, 'net/dev'), NET_DEV);
  writeFile(join(root, 'net/route'), NET_ROUTE);
}

const u64 = (value: number | undefined): runtimeapi.UInt64Value | null => (value === undefined ? null : { value });

export interface ContainerStatsInit {
  id: string;
  name: string;
  timestampNs: number;
  cpuNanos?: number;
  usageNanoCores?: number;
  workingSetBytes?: number;
  usageBytes?: number;
  rssBytes?: number;
  writableLayer?: { usedBytes: number; inodesUsed: number; mountpoint: string };
  /** No CPU and memory figures (an exited container). */
  noCpuMemory?: boolean;
}

export function containerStats(init: ContainerStatsInit): runtimeapi.ContainerStats {
  return {
    attributes: { id: init.id, metadata: { name: init.name, attempt: 0 }, labels: {}, annotations: {} },
    cpu: init.noCpuMemory
      ? null
      : { timestamp: init.timestampNs, usageCoreNanoSeconds: u64(init.cpuNanos ?? 0), usageNanoCores: u64(init.usageNanoCores) },
    memory: init.noCpuMemory
      ? null
      : {
          timestamp: init.timestampNs,
          workingSetBytes: u64(init.workingSetBytes ?? 0),
          availableBytes: { value: 0 },
          usageBytes: u64(init.usageBytes),
          rssBytes: u64(init.rssBytes),
          pageFaults: null,
          majorPageFaults: null,
        },
    writableLayer: init.writableLayer
      ? {
          timestamp: init.timestampNs,
          fsId: { mountpoint: init.writableLayer.mountpoint },
          usedBytes: { value: init.writableLayer.usedBytes },
          inodesUsed: { value: init.writableLayer.inodesUsed },
        }
      : null,
    swap: null,
  };
}

export function sandbox(init: { id: string; name: string; namespace?: string; uid?: string; createdAtNs: number; ready?: boolean }): runtimeapi.PodSandbox {
  return {
    id: init.id,
    metadata: { name: init.name, namespace: init.namespace ?? 'default', uid: init.uid ?? `uid-${init.name}`, attempt: 0 },
    state: init.ready === false ? 'SANDBOX_NOTREADY' : 'SANDBOX_READY',
    createdAt: init.createdAtNs,
    labels: {},
    annotations: {},
    runtimeHandler: '',
  };
}

export function container(init: {
  id: string;
  sandboxId: string;
  name: string;
  createdAtNs: number;
  running?: boolean;
  pod?: { name: string; namespace: string; uid: string };
}): runtimeapi.Container {
  const labels: Record<string, string> = init.pod
    ? {
        'io.kubernetes.pod.name': init.pod.name,
        'io.kubernetes.pod.namespace': init.pod.namespace,
        'io.kubernetes.pod.uid': init.pod.uid,
        'io.kubernetes.container.name': init.name,
      }
    : {};
  return {
    id: init.id,
    podSandboxId: init.sandboxId,
    metadata: { name: init.name, attempt: 0 },
    image: { image: 'busybox', annotations: {}, userSpecifiedImage: '', runtimeHandler: '' },
    imageRef: 'sha256:busybox',
    state: init.running === false ? 'CONTAINER_EXITED' : 'CONTAINER_RUNNING',
    createdAt: init.createdAtNs,
    labels,
    annotations: {},
    imageId: '',
  };
}

/**
 * The four CRI calls the stats need, answering what the test put in. `sandboxStats: null` makes
 * ListPodSandboxStats fail as Unimplemented (a runtime without it).
 */
export class FakeStatsRuntime implements StatsRuntimeService {
  sandboxes: runtimeapi.PodSandbox[] = [];
  containers: runtimeapi.Container[] = [];
  sandboxStats: runtimeapi.PodSandboxStats[] | null = [];
  containerStats: runtimeapi.ContainerStats[] = [];
  /** Makes the named method fail with this error. */
  readonly errors = new Map<string, Error>();
  readonly calls: string[] = [];

  private call(method: string): void {
    this.calls.push(method);
    const err = this.errors.get(method);
    if (err) throw err;
  }

  async listPodSandbox(): Promise<runtimeapi.PodSandbox[]> {
    this.call('listPodSandbox');
    return structuredClone(this.sandboxes);
  }

  async listContainers(): Promise<runtimeapi.Container[]> {
    this.call('listContainers');
    return structuredClone(this.containers);
  }

  async listPodSandboxStats(): Promise<runtimeapi.PodSandboxStats[]> {
    this.call('listPodSandboxStats');
    if (this.sandboxStats === null) {
      throw criError({ rpc: 'RuntimeService/ListPodSandboxStats', code: 'Unimplemented', details: 'unknown method ListPodSandboxStats' });
    }
    return structuredClone(this.sandboxStats);
  }

  async listContainerStats(): Promise<runtimeapi.ContainerStats[]> {
    this.call('listContainerStats');
    return structuredClone(this.containerStats);
  }
}

/** ImageFsInfo with a fixed answer (or a failure). */
export class FakeImageFs {
  usedBytes = 5 * MiB;
  inodesUsed = 50;
  mountpoint: string;
  timestampNs = 0;
  error: Error | undefined;

  constructor(mountpoint: string) {
    this.mountpoint = mountpoint;
  }

  async imageFsInfo(): Promise<runtimeapi.ImageFsInfoResponse> {
    if (this.error) throw this.error;
    return {
      imageFilesystems: [
        { timestamp: this.timestampNs, fsId: { mountpoint: this.mountpoint }, usedBytes: { value: this.usedBytes }, inodesUsed: { value: this.inodesUsed } },
      ],
      containerFilesystems: [],
    };
  }
}

/** statfs answering fixed figures for every path (so tests do not depend on the machine's disks). */
export function fixedStatfs(figures: Partial<{ type: number; bsize: number; blocks: number; bfree: number; bavail: number; files: number; ffree: number }> = {}) {
  const st = { type: 0xef53, bsize: 4096, blocks: 1000, bfree: 600, bavail: 500, files: 2000, ffree: 1500, ...figures };
  const calls: string[] = [];
  const fn = async (path: string) => {
    calls.push(path);
    return st;
  };
  return Object.assign(fn, { calls });
}
