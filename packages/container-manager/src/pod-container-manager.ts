// Go: pkg/kubelet/cm/pod_container_manager_linux.go (podContainerManagerImpl, podContainerManagerNoop) and the
// kubelet's cleanupOrphanedPodCgroups (kubelet_pods.go).
import { posix } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { CPU_QUOTA_PERIOD_US, CPU_MIN_SHARES, getPodQOS, defaultLogger, type Logger } from '@kubelet-ts/core';
import { aggregateMessage, cgroupfsName, formatCgroupName, newCgroupName } from './cgroup-names.js';
import { resourceConfigForPod } from './resources.js';
import type { CgroupManager, CgroupName, QOSContainersInfo } from './types.js';

/** Go: podCgroupNamePrefix. */
export const POD_CGROUP_NAME_PREFIX = 'pod';

/** Go: GetPodCgroupNameSuffix: "pod" + the pod's UID. */
export function podCgroupNameSuffix(uid: string): string {
  return POD_CGROUP_NAME_PREFIX + uid;
}

/** Go: cm.PodContainerManager: the pod-level cgroups. Both PodContainerManager and NoopPodContainerManager implement it. */
export interface PodCgroupManager {
  getPodContainerName(pod: V1Pod): { name: CgroupName; literal: string };
  exists(pod: V1Pod): Promise<boolean>;
  ensureExists(pod: V1Pod): Promise<void>;
  destroy(name: CgroupName): Promise<void>;
  reduceCpuLimits(name: CgroupName): Promise<void>;
  getAllPodsFromCgroups(): Promise<Map<string, CgroupName>>;
  isPodCgroup(literal: string): { isPod: boolean; uid?: string };
}

/** Sends SIGKILL to a process; resolving means killed or already gone. */
export type KillProcess = (pid: number) => void | Promise<void>;

/** The default KillProcess: process.kill(pid, 'SIGKILL'); a process already gone (ESRCH) is fine, as Go's os.ErrProcessDone. */
export const killProcessWithSigkill: KillProcess = (pid) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ESRCH') throw err;
  }
};

export interface PodContainerManagerOptions {
  cgroupManager: CgroupManager;
  qosContainersInfo: QOSContainersInfo;
  /** --pod-max-pids; default -1 (no limit). */
  podPidsLimit?: number;
  /** --cpu-cfs-quota; default true. */
  enforceCpuLimits?: boolean;
  /** --cpu-cfs-quota-period in µs; default 100000. */
  cpuCfsQuotaPeriodUs?: number;
  /** How remaining processes are killed before a pod cgroup goes; default SIGKILL. */
  killProcess?: KillProcess;
  logger?: Logger;
}

/** Go: podContainerManagerImpl. */
export class PodContainerManager implements PodCgroupManager {
  private readonly cgroupManager: CgroupManager;
  private readonly qos: QOSContainersInfo;
  private readonly podPidsLimit: number;
  private readonly enforceCpuLimits: boolean;
  private readonly cpuPeriodUs: number;
  private readonly kill: KillProcess;
  private readonly logger: Logger;

  constructor(opts: PodContainerManagerOptions) {
    this.cgroupManager = opts.cgroupManager;
    this.qos = opts.qosContainersInfo;
    this.podPidsLimit = opts.podPidsLimit ?? -1;
    this.enforceCpuLimits = opts.enforceCpuLimits ?? true;
    this.cpuPeriodUs = opts.cpuCfsQuotaPeriodUs ?? CPU_QUOTA_PERIOD_US;
    this.kill = opts.killProcess ?? killProcessWithSigkill;
    this.logger = opts.logger ?? defaultLogger;
  }

  /** Go: GetPodContainerName: the pod's cgroup under its QoS class's cgroup, and its literal cgroupfs name. */
  getPodContainerName(pod: V1Pod): { name: CgroupName; literal: string } {
    const qosClass = getPodQOS(pod);
    const parent = qosClass === 'Guaranteed' ? this.qos.guaranteed : qosClass === 'Burstable' ? this.qos.burstable : this.qos.bestEffort;
    const name = newCgroupName(parent, podCgroupNameSuffix(pod.metadata?.uid ?? ''));
    return { name, literal: this.cgroupManager.name(name) };
  }

  exists(pod: V1Pod): Promise<boolean> {
    return this.cgroupManager.exists(this.getPodContainerName(pod).name);
  }

  /** Go: EnsureExists: creates the pod cgroup with ResourceConfigForPod (and --pod-max-pids) when missing. */
  async ensureExists(pod: V1Pod): Promise<void> {
    const { name } = this.getPodContainerName(pod);
    if (await this.cgroupManager.exists(name)) return;
    const resources = resourceConfigForPod(pod, { enforceCpuLimits: this.enforceCpuLimits, cpuPeriodUs: this.cpuPeriodUs });
    if (this.podPidsLimit > 0) resources.pidsLimit = this.podPidsLimit;
    try {
      await this.cgroupManager.create(name, resources);
    } catch (err) {
      throw new Error(`failed to create container for ${formatCgroupName(name)} : ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Go: tryKillingCgroupProcesses: SIGKILL every process in the cgroup tree, up to 5 passes over the ones not killed
   * yet. On cgroup v2 with cgroup.kill the whole tree is killed at once first (killAllProcesses); the pid loop is
   * the fallback when the kernel has no cgroup.kill.
   */
  private async tryKillingCgroupProcesses(name: CgroupName): Promise<void> {
    if (await this.cgroupManager.killAllProcesses(name)) {
      this.logger.v(3).info('Killed all processes of the cgroup through cgroup.kill', { cgroupName: formatCgroupName(name) });
      return;
    }
    const pidsToKill = await this.cgroupManager.pids(name);
    if (pidsToKill.length === 0) return;
    const removed = new Set<number>();
    let errors: unknown[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      if (attempt > 0) this.logger.v(3).info('Attempt failed to kill all unwanted process from cgroup. Retrying', { attempt, cgroupName: formatCgroupName(name) });
      errors = [];
      for (const pid of pidsToKill) {
        if (removed.has(pid)) continue;
        this.logger.v(3).info('Attempt to kill process from cgroup', { pid, cgroupName: formatCgroupName(name) });
        try {
          await this.kill(pid);
          removed.add(pid);
        } catch (err) {
          this.logger.v(3).info('Failed to kill process from cgroup', { pid, cgroupName: formatCgroupName(name), err: (err as Error).message });
          errors.push(err);
        }
      }
      if (errors.length === 0) {
        this.logger.v(3).info('Successfully killed all unwanted processes from cgroup', { cgroupName: formatCgroupName(name) });
        return;
      }
    }
    throw new Error(aggregateMessage(errors));
  }

  /** Go: Destroy: kills what still runs in the pod cgroup, then removes it in every hierarchy. */
  async destroy(name: CgroupName): Promise<void> {
    try {
      await this.tryKillingCgroupProcesses(name);
    } catch (err) {
      this.logger.warn('Failed to kill all the processes attached to cgroup', { cgroupName: formatCgroupName(name) });
      throw new Error(`failed to kill all the processes attached to the ${formatCgroupName(name)} cgroups : ${(err as Error).message}`, { cause: err });
    }
    try {
      await this.cgroupManager.destroy(name);
    } catch (err) {
      this.logger.warn('Failed to delete cgroup paths', { cgroupName: formatCgroupName(name), err: (err as Error).message });
      throw new Error(`failed to delete cgroup paths for ${formatCgroupName(name)} : ${(err as Error).message}`, { cause: err });
    }
  }

  /** Go: ReduceCPULimits: the cgroup gets the minimum cpu.shares (2). */
  reduceCpuLimits(name: CgroupName): Promise<void> {
    return this.cgroupManager.update(name, { cpuShares: CPU_MIN_SHARES });
  }

  private qosParents(): CgroupName[] {
    return [this.qos.bestEffort, this.qos.burstable, this.qos.guaranteed];
  }

  /**
   * Go: IsPodCgroup: whether a literal cgroupfs name is a pod cgroup (a `pod<uid>` directly below a QoS cgroup), read
   * back with the driver's cgroupName ("/kubepods.slice/kubepods-pod1_2.slice" is pod "1-2" on systemd).
   */
  isPodCgroup(literal: string): { isPod: boolean; uid?: string } {
    const name = this.cgroupManager.cgroupName(literal);
    const parent = cgroupfsName(name.slice(0, -1));
    if (name.length === 0 || !this.qosParents().some((qos) => cgroupfsName(qos) === parent)) return { isPod: false };
    const base = name[name.length - 1];
    const parts = base.split(POD_CGROUP_NAME_PREFIX);
    if (!base.startsWith(POD_CGROUP_NAME_PREFIX) || parts.length !== 2) return { isPod: false };
    return { isPod: true, uid: parts[1] };
  }

  /**
   * Go: GetAllPodsFromCgroups: pod UID -> cgroup name of every pod cgroup below the QoS cgroups, in any hierarchy.
   * Each child directory is read back with the driver's cgroupName from its full literal path (systemd encodes the
   * whole hierarchy in the last element, "kubepods-burstable-pod1_2.slice" -> ['kubepods', 'burstable', 'pod1-2']).
   */
  async getAllPodsFromCgroups(): Promise<Map<string, CgroupName>> {
    const found = new Map<string, CgroupName>();
    for (const qos of this.qosParents()) {
      const qcConversion = this.cgroupManager.name(qos);
      for (const child of await this.cgroupManager.listChildren(qos)) {
        const cgroupfsPath = posix.join(qcConversion, child);
        const internalPath = this.cgroupManager.cgroupName(cgroupfsPath);
        const basePath = internalPath[internalPath.length - 1] ?? '';
        if (!basePath.includes(POD_CGROUP_NAME_PREFIX)) continue;
        const parts = basePath.split(POD_CGROUP_NAME_PREFIX);
        if (parts.length !== 2) {
          this.logger.error('pod cgroup manager ignoring unexpected cgroup because it is not a pod', undefined, { path: cgroupfsPath });
          continue;
        }
        found.set(parts[1], internalPath);
      }
    }
    return found;
  }
}

/** Go: podContainerManagerNoop, used with --cgroups-per-qos=false: every pod runs in the cgroup root. */
export class NoopPodContainerManager implements PodCgroupManager {
  constructor(private readonly cgroupRoot: CgroupName = []) {}

  getPodContainerName(_pod: V1Pod): { name: CgroupName; literal: string } {
    return { name: this.cgroupRoot, literal: '' };
  }

  async exists(_pod: V1Pod): Promise<boolean> {
    return true;
  }

  async ensureExists(_pod: V1Pod): Promise<void> {}

  async destroy(_name: CgroupName): Promise<void> {}

  async reduceCpuLimits(_name: CgroupName): Promise<void> {}

  async getAllPodsFromCgroups(): Promise<Map<string, CgroupName>> {
    return new Map();
  }

  isPodCgroup(_literal: string): { isPod: boolean; uid?: string } {
    return { isPod: false };
  }
}

/**
 * Go: Kubelet.cleanupOrphanedPodCgroups: destroys the cgroups of pods not in possiblyRunning (killing what still
 * runs there). While a pod's volumes still exist its cgroup stays, with its CPU reduced to the minimum, so
 * memory-backed volumes are not charged to the parent. Errors are logged: housekeeping tries again.
 */
export async function cleanupOrphanedPodCgroups(
  pcm: PodCgroupManager,
  cgroupPods: Map<string, CgroupName>,
  possiblyRunning: ReadonlySet<string>,
  podVolumesExist: (uid: string) => boolean,
  logger: Logger = defaultLogger,
): Promise<void> {
  const destroys: Promise<void>[] = [];
  for (const [uid, name] of cgroupPods) {
    if (possiblyRunning.has(uid)) continue;
    if (podVolumesExist(uid)) {
      logger.v(3).info('Orphaned pod found, but volumes not yet removed.  Reducing cpu to minimum', { podUID: uid });
      try {
        await pcm.reduceCpuLimits(name);
      } catch (err) {
        logger.warn('Failed to reduce cpu time for pod pending volume cleanup', { podUID: uid, err: (err as Error).message });
      }
      continue;
    }
    logger.v(3).info('Orphaned pod found, removing pod cgroups', { podUID: uid });
    destroys.push(
      pcm.destroy(name).catch((err: unknown) => {
        logger.v(3).info('Failed to destroy orphaned pod cgroups', { podUID: uid, err: (err as Error).message });
      }),
    );
  }
  await Promise.all(destroys);
}
