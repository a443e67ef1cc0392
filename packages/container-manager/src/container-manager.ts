// Go: pkg/kubelet/cm/container_manager_linux.go (setupNode, Start), node_container_manager_linux.go (node
// allocatable) and qos_container_manager_linux.go (the QoS cgroups and their periodic update), on the cgroupfs
// and systemd drivers.
import type { V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import {
  CPU_MIN_SHARES,
  CPU_QUOTA_PERIOD_US,
  getPodQOS,
  KubeletEventReason,
  milliCpuToShares,
  noopEventRecorder,
  defaultLogger,
  errorText,
  Quantity,
  realClock,
  type Clock,
  type EventRecorder,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import { createCgroupManagerSync } from './create-cgroup-manager.js';
import { aggregateMessage, cgroupfsName, formatCgroupName, newCgroupName, parseCgroupfsToCgroupName, quoteCgroupName } from './cgroup-names.js';
import { createSystemdCgroupManagerSync } from './systemd-cgroup-manager.js';
import { SYSTEMD_MANAGER_UNAVAILABLE, type SystemdUnitManager } from './systemd-units.js';
import { NoopPodContainerManager, PodContainerManager, type KillProcess, type PodCgroupManager } from './pod-container-manager.js';
import { podRequestsAndLimits } from './resources.js';
import { setupKernelTunables, type KernelTunablesOptions } from './kernel-tunables.js';
import type { CgroupDriver, CgroupManager, CgroupName, CgroupVersion, MemoryEvents, PressureStats, QOSContainersInfo, ResourceConfig } from './types.js';

/** Go: kubetypes.NodeAllocatableEnforcementKey and friends (--enforce-node-allocatable values). */
export const NODE_ALLOCATABLE_ENFORCEMENT = { pods: 'pods', systemReserved: 'system-reserved', kubeReserved: 'kube-reserved', none: 'none' } as const;
/** Go: defaultNodeAllocatableCgroupName. */
export const DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME = 'kubepods';
/** Go: periodicQOSCgroupUpdateInterval. */
export const QOS_CGROUP_UPDATE_INTERVAL_MS = 60_000;
/** Go: the retry period of the node allocatable update on kubepods. */
export const NODE_ALLOCATABLE_RETRY_INTERVAL_MS = 60_000;

export interface NodeCapacity {
  /** CPU in millicores. */
  milliCpu: number;
  memoryBytes: number;
  /** The node's pid limit (kernel.pid_max); optional. */
  pids?: number;
}

export interface ContainerManagerOptions {
  /** --cgroups-per-qos; default true. */
  cgroupsPerQOS?: boolean;
  /** --cgroup-root; default '/'. */
  cgroupRoot?: string;
  /** --cgroup-driver; default 'cgroupfs'. 'systemd' needs `systemdUnits` (or a `cgroupManager`). */
  cgroupDriver?: CgroupDriver;
  /** --enforce-node-allocatable; default ['pods'] (with cgroupsPerQOS; [] without). */
  enforceNodeAllocatable?: string[];
  /**
   * --system-reserved-cgroup, read as the driver reads a literal name (Go: cgroupManager.CgroupName): "/system.slice"
   * is ['system.slice'] on cgroupfs and ['system'] (the unit system.slice) on systemd.
   */
  systemReservedCgroup?: string;
  /** --kube-reserved-cgroup, read as systemReservedCgroup is. */
  kubeReservedCgroup?: string;
  /** --system-reserved: resource name -> quantity, e.g. { cpu: '200m', memory: '500Mi', pid: '1000' }. */
  systemReserved?: Record<string, string>;
  /** --kube-reserved. */
  kubeReserved?: Record<string, string>;
  capacity: NodeCapacity;
  /** --cpu-cfs-quota; default true. */
  cpuCfsQuota?: boolean;
  /** --cpu-cfs-quota-period in µs; default 100000. */
  cpuCfsQuotaPeriodUs?: number;
  /** --pod-max-pids; default -1 (unlimited). */
  podPidsLimit?: number;
  /** Default: the driver's manager on /sys/fs/cgroup (version detected). */
  cgroupManager?: CgroupManager;
  /**
   * The systemd driver's connection to systemd (org.freedesktop.systemd1.Manager, e.g. SystemdDbusUnitManager on
   * the system bus): with cgroupDriver 'systemd' and no cgroupManager, a SystemdCgroupManager is built on it.
   */
  systemdUnits?: SystemdUnitManager;
  /** How processes left in a pod cgroup are killed before it is removed; default SIGKILL. */
  killProcess?: KillProcess;
  /** Node events SuccessfulNodeAllocatableEnforcement / FailedNodeAllocatableEnforcement. */
  recorder?: EventRecorder;
  /** The node the events are about (core's nodeReference(nodeName)). */
  nodeRef?: V1ObjectReference;
  /**
   * Go: setupNode's setupKernelTunables: the kernel tunables the kubelet expects, checked as start() begins
   * (`error`: --protect-kernel-defaults; `modify`: Go's default). Left out: the tunables are not looked at.
   */
  kernelTunables?: KernelTunablesOptions;
  clock?: Clock;
  logger?: Logger;
}

/** What the container manager last applied to one cgroup. */
export interface AppliedCgroup {
  name: CgroupName;
  action: 'created' | 'updated';
  resources: ResourceConfig;
  atMs: number;
}

export interface ContainerManagerError {
  /** The literal cgroup name, when the error is about one. */
  cgroup?: string;
  operation: string;
  message: string;
  atMs: number;
}

/** A cgroup's OOM and PSI figures, for /metrics/cadvisor's container_oom_events_total and container_pressure_*. */
export interface CgroupOomPressure {
  /** OOM kills: v2 memory.events oom_kill, v1 memory.oom_control oom_kill; absent when unreadable. */
  oomEvents?: number;
  /** v2 PSI (cpu, memory, io); absent on v1 and without PSI. */
  pressure?: PressureStats;
}

/** The OOM and PSI figures of a pod cgroup and of the runtime's container cgroups below it. */
export interface PodCgroupStats {
  /** The pod cgroup's literal name, e.g. /kubepods/burstable/pod<uid> (cAdvisor's `id` label). */
  cgroup: string;
  /**
   * The pod cgroup. v2's memory.events is hierarchical already; v1's oom_kill counts only the cgroup's own kills, so
   * on v1 it is the sum over the pod cgroup and its children (a child removed since, with its count, is not in it).
   */
  pod: CgroupOomPressure;
  /** The pod cgroup's children (the containers and the sandbox) by the container id their names carry. */
  containers: Map<string, CgroupOomPressure & { cgroup: string }>;
}

/**
 * The container id a runtime's cgroup below a pod cgroup is named by: the name itself on cgroupfs (containerd and
 * runc use "<pod cgroup>/<id>"), the part after the last "-" of a systemd scope ("cri-containerd-<id>.scope",
 * "crio-<id>.scope", "docker-<id>.scope") or of a prefixed 64-hex id ("crio-<id>").
 */
export function containerIdFromCgroup(child: string): string {
  if (child.endsWith('.scope')) {
    const unit = child.slice(0, -'.scope'.length);
    return unit.slice(unit.lastIndexOf('-') + 1);
  }
  const prefixed = /^[a-z][a-z0-9-]*-([0-9a-f]{64})$/.exec(child);
  return prefixed ? prefixed[1] : child;
}

export interface ContainerManagerStatus {
  started: boolean;
  cgroupVersion?: CgroupVersion;
  /** The kubepods cgroup's literal name ('' without cgroupsPerQOS). */
  nodeAllocatableCgroup: string;
  enforceNodeAllocatable: string[];
  nodeAllocatable: NodeCapacity;
  /** Literal cgroup name -> what was last written there (removed when the cgroup is destroyed). */
  cgroups: Record<string, AppliedCgroup>;
  /** The most recent errors (at most 20), oldest first. */
  errors: ContainerManagerError[];
  lastQOSUpdateMs?: number;
}

const MAX_STATUS_ERRORS = 20;

function parseReserved(label: string, reserved: Record<string, string> | undefined): Map<string, Quantity> {
  const result = new Map<string, Quantity>();
  for (const [name, value] of Object.entries(reserved ?? {})) {
    try {
      result.set(name, Quantity.parse(String(value)));
    } catch (err) {
      throw new Error(`invalid configuration: ${label} ${JSON.stringify(name)}: ${(err as Error).message}`, { cause: err });
    }
  }
  return result;
}

/**
 * Go's KubeletConfiguration validation for the container manager options (its messages), aggregated as Go's
 * utilerrors.NewAggregate. Throws on the first invalid configuration; also parses the reserved quantities.
 */
export function validateContainerManagerOptions(opts: ContainerManagerOptions): void {
  const errors: string[] = [];
  const cgroupsPerQOS = opts.cgroupsPerQOS ?? true;
  const enforce = opts.enforceNodeAllocatable ?? (cgroupsPerQOS ? [NODE_ALLOCATABLE_ENFORCEMENT.pods] : []);
  if (!cgroupsPerQOS && enforce.length > 0) {
    errors.push('invalid configuration: EnforceNodeAllocatable (--enforce-node-allocatable) is not supported unless CgroupsPerQOS (--cgroups-per-qos) feature is turned on');
  }
  for (const value of enforce) {
    switch (value) {
      case NODE_ALLOCATABLE_ENFORCEMENT.pods:
        break;
      case NODE_ALLOCATABLE_ENFORCEMENT.systemReserved:
        if (!opts.systemReservedCgroup) {
          errors.push('invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when system-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable)');
        }
        break;
      case NODE_ALLOCATABLE_ENFORCEMENT.kubeReserved:
        if (!opts.kubeReservedCgroup) {
          errors.push('invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when kube-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable)');
        }
        break;
      case NODE_ALLOCATABLE_ENFORCEMENT.none:
        if (enforce.length > 1) {
          errors.push("invalid configuration: EnforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when 'none' is specified");
        }
        break;
      default:
        errors.push(
          `invalid configuration: option ${JSON.stringify(value)} specified for EnforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "kube-reserved", or "none"`,
        );
    }
  }
  if (cgroupsPerQOS && opts.cgroupRoot === '') {
    errors.push(
      'invalid configuration: cgroups-per-qos was specified and cgroup-root was not specified. To enable the QoS cgroup hierarchy you need to specify a valid cgroup-root',
    );
  }
  try {
    parseReserved('systemReserved', opts.systemReserved);
    parseReserved('kubeReserved', opts.kubeReserved);
  } catch (err) {
    errors.push((err as Error).message);
  }
  if (errors.length > 0) throw new Error(aggregateMessage(errors));
}

/** Records every create/update/destroy made through it, for status(). */
class RecordingCgroupManager implements CgroupManager {
  readonly applied = new Map<string, AppliedCgroup>();

  constructor(
    private readonly inner: CgroupManager,
    private readonly clock: Clock,
    private readonly onError: (cgroup: string, operation: string, err: unknown) => void,
  ) {}

  get version(): CgroupVersion {
    return this.inner.version;
  }

  name(name: CgroupName): string {
    return this.inner.name(name);
  }

  cgroupName(literal: string): CgroupName {
    return this.inner.cgroupName(literal);
  }

  exists(name: CgroupName): Promise<boolean> {
    return this.inner.exists(name);
  }

  private async track(operation: 'created' | 'updated', name: CgroupName, resources: ResourceConfig, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (err) {
      this.onError(this.inner.name(name), operation === 'created' ? 'create' : 'update', err);
      throw err;
    }
    this.applied.set(this.inner.name(name), { name: [...name], action: operation, resources: { ...resources }, atMs: this.clock.now() });
  }

  create(name: CgroupName, resources: ResourceConfig = {}): Promise<void> {
    return this.track('created', name, resources, () => this.inner.create(name, resources));
  }

  update(name: CgroupName, resources: ResourceConfig): Promise<void> {
    return this.track('updated', name, resources, () => this.inner.update(name, resources));
  }

  async destroy(name: CgroupName): Promise<void> {
    try {
      await this.inner.destroy(name);
    } catch (err) {
      this.onError(this.inner.name(name), 'destroy', err);
      throw err;
    }
    const literal = this.inner.name(name);
    for (const key of [...this.applied.keys()]) if (key === literal || key.startsWith(`${literal}/`)) this.applied.delete(key);
  }

  pids(name: CgroupName): Promise<number[]> {
    return this.inner.pids(name);
  }

  memoryUsageBytes(name: CgroupName): Promise<number> {
    return this.inner.memoryUsageBytes(name);
  }

  listChildren(name: CgroupName): Promise<string[]> {
    return this.inner.listChildren(name);
  }

  killAllProcesses(name: CgroupName): Promise<boolean> {
    return this.inner.killAllProcesses(name);
  }

  memoryEvents(name: CgroupName, child?: string): Promise<MemoryEvents | undefined> {
    return this.inner.memoryEvents(name, child);
  }

  pressure(name: CgroupName, child?: string): Promise<PressureStats | undefined> {
    return this.inner.pressure(name, child);
  }
}

/** Go: containerManagerImpl for Linux with the cgroupfs driver: kubepods, the QoS cgroups, node allocatable. */
export class ContainerManager {
  private readonly cgroupsPerQOS: boolean;
  private readonly cgroupRoot: CgroupName;
  private readonly enforce: string[];
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private readonly cgroupManager?: RecordingCgroupManager;
  private readonly errors: ContainerManagerError[] = [];
  private qosInfo: QOSContainersInfo;
  private activePods: () => V1Pod[] = () => [];
  private timers: TimerHandle[] = [];
  private started = false;
  private lastQOSUpdateMs?: number;
  private qosUpdate?: Promise<void>;

  constructor(private readonly opts: ContainerManagerOptions) {
    this.cgroupsPerQOS = opts.cgroupsPerQOS ?? true;
    this.enforce = opts.enforceNodeAllocatable ?? (this.cgroupsPerQOS ? [NODE_ALLOCATABLE_ENFORCEMENT.pods] : []);
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.recorder = opts.recorder ?? noopEventRecorder;
    // Go: with cgroupsPerQOS the kubelet's root is <cgroup-root>/kubepods.
    const root = parseCgroupfsToCgroupName(opts.cgroupRoot ?? '/');
    this.cgroupRoot = this.cgroupsPerQOS ? newCgroupName(root, DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME) : root;
    this.qosInfo = this.cgroupsPerQOS
      ? {
          guaranteed: this.cgroupRoot,
          burstable: newCgroupName(this.cgroupRoot, 'burstable'),
          bestEffort: newCgroupName(this.cgroupRoot, 'besteffort'),
        }
      : { guaranteed: [], burstable: [], bestEffort: [] };
    const inner = opts.cgroupManager ?? this.defaultCgroupManager(opts);
    if (inner) this.cgroupManager = new RecordingCgroupManager(inner, this.clock, (cgroup, operation, err) => this.recordError(operation, err, cgroup));
  }

  /** Go: NewCgroupManager for the driver; undefined for systemd without a connection to systemd (start() says so). */
  private defaultCgroupManager(opts: ContainerManagerOptions): CgroupManager | undefined {
    const driver = opts.cgroupDriver ?? 'cgroupfs';
    if (driver === 'systemd') {
      return opts.systemdUnits ? createSystemdCgroupManagerSync({ units: opts.systemdUnits, logger: this.logger, clock: this.clock }) : undefined;
    }
    return createCgroupManagerSync({ driver, logger: this.logger, clock: this.clock });
  }

  private recordError(operation: string, err: unknown, cgroup?: string): void {
    this.errors.push({ cgroup, operation, message: err instanceof Error ? err.message : String(err), atMs: this.clock.now() });
    if (this.errors.length > MAX_STATUS_ERRORS) this.errors.splice(0, this.errors.length - MAX_STATUS_ERRORS);
  }

  private manager(): RecordingCgroupManager {
    if (!this.cgroupManager) throw new Error(SYSTEMD_MANAGER_UNAVAILABLE);
    return this.cgroupManager;
  }

  private nodeRef(): V1ObjectReference {
    return this.opts.nodeRef ?? { kind: 'Node', name: '', uid: '', namespace: '' };
  }

  /**
   * Go: Start (validateNodeAllocatable, setupNode, enforceNodeAllocatableCgroups): validates the options, creates
   * <cgroupRoot>/kubepods with the node allocatable limits and the burstable/besteffort cgroups, enforces the system
   * and kube reserved cgroups when asked, and updates the QoS cgroups now and every minute.
   */
  async start(activePods: () => V1Pod[], signal?: AbortSignal): Promise<void> {
    validateContainerManagerOptions(this.opts);
    if (!this.cgroupManager) throw new Error(SYSTEMD_MANAGER_UNAVAILABLE);
    this.validateNodeAllocatable();
    if (this.opts.kernelTunables) await setupKernelTunables({ logger: this.logger, ...this.opts.kernelTunables });
    this.activePods = activePods;
    if (this.cgroupsPerQOS) {
      const cm = this.manager();
      const configuredRoot = parseCgroupfsToCgroupName(this.opts.cgroupRoot ?? '/');
      if (!(await cm.exists(configuredRoot))) {
        throw new Error(`invalid configuration: cgroup-root ${JSON.stringify(this.opts.cgroupRoot ?? '/')} doesn't exist`);
      }
      this.logger.info('Container manager verified user specified cgroup-root exists', { cgroupRoot: formatCgroupName(configuredRoot) });
      await this.createNodeAllocatableCgroups();
      await this.startQOSContainerManager();
    }
    this.started = true;
    await this.enforceNodeAllocatableCgroups();
    if (signal) {
      if (signal.aborted) await this.stop();
      else signal.addEventListener('abort', () => void this.stop(), { once: true });
    }
  }

  /** Cancels the periodic QoS update and the node allocatable retries; waits for a running update. */
  async stop(): Promise<void> {
    for (const timer of this.timers) timer.cancel();
    this.timers = [];
    this.started = false;
    await this.qosUpdate?.catch(() => undefined);
  }

  /** '' when cgroupsPerQOS is false; else the pod cgroup's literal name (Go: GetPodCgroupParent). */
  podCgroupParent(pod: V1Pod): string {
    if (!this.cgroupsPerQOS) return '';
    return this.newPodContainerManager().getPodContainerName(pod).literal;
  }

  /** Go: NewPodContainerManager: the real one with cgroupsPerQOS, else the noop one. */
  newPodContainerManager(): PodCgroupManager {
    if (!this.cgroupsPerQOS) return new NoopPodContainerManager(this.cgroupRoot);
    return new PodContainerManager({
      cgroupManager: this.manager(),
      qosContainersInfo: this.qosInfo,
      podPidsLimit: this.opts.podPidsLimit ?? -1,
      enforceCpuLimits: this.opts.cpuCfsQuota ?? true,
      cpuCfsQuotaPeriodUs: this.opts.cpuCfsQuotaPeriodUs ?? CPU_QUOTA_PERIOD_US,
      killProcess: this.opts.killProcess,
      logger: this.logger,
    });
  }

  /**
   * The OOM and PSI figures of the pod's cgroup and of each child cgroup below it, for /metrics/cadvisor; undefined
   * without cgroupsPerQOS or a cgroup manager. Never throws for a cgroup or a file that is missing or unreadable: the
   * figure is left out (logged at v(4)). Cheap: listChildren, then memory.events/memory.oom_control and the PSI files
   * of the pod cgroup and its children.
   */
  async podCgroupStats(pod: V1Pod): Promise<PodCgroupStats | undefined> {
    if (!this.cgroupsPerQOS || !this.cgroupManager) return undefined;
    const cm = this.cgroupManager;
    const { name, literal } = this.newPodContainerManager().getPodContainerName(pod);
    const read = async (child?: string): Promise<CgroupOomPressure> => {
      const cgroup = child === undefined ? literal : `${literal}/${child}`;
      const [events, pressure] = await Promise.allSettled([cm.memoryEvents(name, child), cm.pressure(name, child)]);
      const figures: CgroupOomPressure = {};
      if (events.status === 'rejected') this.logger.v(4).info('Unable to read the OOM counters of the cgroup', { cgroup, err: errorText(events.reason) });
      else if (events.value) figures.oomEvents = events.value.oomKill;
      if (pressure.status === 'rejected') this.logger.v(4).info('Unable to read the pressure stall information of the cgroup', { cgroup, err: errorText(pressure.reason) });
      else if (pressure.value) figures.pressure = pressure.value;
      return figures;
    };
    let children: string[] = [];
    try {
      children = await cm.listChildren(name);
    } catch (err) {
      this.logger.v(4).info('Unable to list the child cgroups of the pod cgroup', { cgroup: literal, err: errorText(err) });
    }
    const [podFigures, ...childFigures] = await Promise.all([read(), ...children.map((child) => read(child))]);
    const containers = new Map<string, CgroupOomPressure & { cgroup: string }>();
    children.forEach((child, i) => containers.set(containerIdFromCgroup(child), { ...childFigures[i], cgroup: `${literal}/${child}` }));
    if (cm.version === 'v1') {
      const counts = [podFigures, ...childFigures].map((f) => f.oomEvents).filter((n): n is number => n !== undefined);
      if (counts.length > 0) podFigures.oomEvents = counts.reduce((a, b) => a + b, 0);
    }
    return { cgroup: literal, pod: podFigures, containers };
  }

  /** Go: GetQOSContainersInfo (empty names without cgroupsPerQOS). */
  getQOSContainersInfo(): QOSContainersInfo {
    return { ...this.qosInfo };
  }

  /** Capacity minus system and kube reserved, never negative (Go: getNodeAllocatableInternalAbsolute). */
  nodeAllocatableAbsolute(): NodeCapacity {
    const system = parseReserved('systemReserved', this.opts.systemReserved);
    const kube = parseReserved('kubeReserved', this.opts.kubeReserved);
    const capacity = this.opts.capacity;
    const minus = (value: number, name: string, milli: boolean): number => {
      let result = value;
      for (const reserved of [system.get(name), kube.get(name)]) if (reserved) result -= milli ? reserved.milliValue() : reserved.value();
      return Math.max(0, result);
    };
    const result: NodeCapacity = { milliCpu: minus(capacity.milliCpu, 'cpu', true), memoryBytes: minus(capacity.memoryBytes, 'memory', false) };
    if (capacity.pids !== undefined) result.pids = minus(capacity.pids, 'pid', false);
    return result;
  }

  /** What kubepods is limited to: node allocatable when 'pods' is enforced, else the capacity. */
  private kubepodsAllocatable(): NodeCapacity {
    return this.cgroupsPerQOS && this.enforce.includes(NODE_ALLOCATABLE_ENFORCEMENT.pods) ? this.nodeAllocatableAbsolute() : { ...this.opts.capacity };
  }

  status(): ContainerManagerStatus {
    return {
      started: this.started,
      cgroupVersion: this.cgroupManager?.version,
      nodeAllocatableCgroup: this.cgroupsPerQOS ? (this.cgroupManager?.name(this.cgroupRoot) ?? cgroupfsName(this.cgroupRoot)) : '',
      enforceNodeAllocatable: [...this.enforce],
      nodeAllocatable: this.kubepodsAllocatable(),
      cgroups: Object.fromEntries([...(this.cgroupManager?.applied ?? new Map<string, AppliedCgroup>())].map(([k, v]) => [k, { ...v, name: [...v.name], resources: { ...v.resources } }])),
      errors: this.errors.map((e) => ({ ...e })),
      lastQOSUpdateMs: this.lastQOSUpdateMs,
    };
  }

  /** Go: validateNodeAllocatable: the reservations may not exceed the capacity. */
  private validateNodeAllocatable(): void {
    const system = parseReserved('systemReserved', this.opts.systemReserved);
    const kube = parseReserved('kubeReserved', this.opts.kubeReserved);
    const capacity = new Map<string, Quantity>([
      ['cpu', Quantity.fromMilli(this.opts.capacity.milliCpu)],
      ['memory', Quantity.fromValue(this.opts.capacity.memoryBytes, 'BinarySI')],
    ]);
    const errors: string[] = [];
    for (const [name, quantity] of capacity) {
      let reserved = Quantity.zero();
      for (const r of [system.get(name), kube.get(name)]) if (r) reserved = reserved.add(r);
      if (reserved.isZero()) continue;
      const value = quantity.sub(reserved);
      if (value.sign() < 0) errors.push(`Resource ${JSON.stringify(name)} has an allocatable of ${reserved.toString()}, capacity of ${value.toString()}`);
    }
    if (errors.length > 0) throw new Error(`invalid Node Allocatable configuration. ${errors.join(' ')}`);
  }

  /** Go: getCgroupConfig for the node allocatable resources. */
  private kubepodsConfig(): ResourceConfig {
    const allocatable = this.kubepodsAllocatable();
    const config: ResourceConfig = { memoryLimitBytes: allocatable.memoryBytes, cpuShares: milliCpuToShares(allocatable.milliCpu) };
    if (allocatable.pids !== undefined) config.pidsLimit = allocatable.pids;
    return config;
  }

  /** Go: createNodeAllocatableCgroups: kubepods is created with the node allocatable limits when missing. */
  private async createNodeAllocatableCgroups(): Promise<void> {
    const cm = this.manager();
    if (await cm.exists(this.cgroupRoot)) return;
    try {
      await cm.create(this.cgroupRoot, this.kubepodsConfig());
    } catch (err) {
      this.logger.error('Failed to create cgroup', err, { cgroupName: formatCgroupName(this.cgroupRoot) });
      throw err;
    }
  }

  /** Go: qosContainerManagerImpl.Start: the burstable and besteffort cgroups (besteffort with 2 shares). */
  private async startQOSContainerManager(): Promise<void> {
    const cm = this.manager();
    if (!(await cm.exists(this.cgroupRoot))) throw new Error(`root container ${formatCgroupName(this.cgroupRoot)} doesn't exist`);
    const classes: Array<['Burstable' | 'BestEffort', CgroupName, ResourceConfig]> = [
      ['Burstable', this.qosInfo.burstable, {}],
      ['BestEffort', this.qosInfo.bestEffort, { cpuShares: CPU_MIN_SHARES }],
    ];
    for (const [qosClass, name, resources] of classes) {
      if (!(await cm.exists(name))) {
        await cm.create(name, resources).catch((err: unknown) => {
          throw new Error(`failed to create top level ${qosClass} QOS cgroup : ${(err as Error).message}`, { cause: err });
        });
      } else {
        await cm.update(name, resources).catch((err: unknown) => {
          throw new Error(`failed to update top level ${qosClass} QOS cgroup : ${(err as Error).message}`, { cause: err });
        });
      }
    }
    // Go: wait.Until(UpdateCgroups, 1 min): now and every minute; failures are only logged.
    const periodic = async () => {
      try {
        await this.updateQOSCgroups();
      } catch (err) {
        this.logger.info('Failed to reserve QoS requests', { err: (err as Error).message });
      }
    };
    await periodic();
    this.timers.push(this.clock.setInterval(() => void periodic(), QOS_CGROUP_UPDATE_INTERVAL_MS));
  }

  /**
   * Go: UpdateCgroups: burstable cpu.shares from the sum of the active burstable pods' CPU requests, besteffort
   * 2 shares; kubepods is updated with nothing to change. Calls are serialized.
   */
  updateQOSCgroups(): Promise<void> {
    if (!this.cgroupsPerQOS) return Promise.resolve();
    const previous = this.qosUpdate ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.doUpdateQOSCgroups());
    this.qosUpdate = run;
    return run;
  }

  private async doUpdateQOSCgroups(): Promise<void> {
    const cm = this.manager();
    let burstableMilliCpu = 0;
    for (const pod of this.activePods()) {
      if (getPodQOS(pod) !== 'Burstable') continue;
      burstableMilliCpu += podRequestsAndLimits(pod).requests.get('cpu')?.milliValue() ?? 0;
    }
    const configs: Array<[CgroupName, ResourceConfig]> = [
      [this.qosInfo.guaranteed, {}],
      [this.qosInfo.burstable, { cpuShares: milliCpuToShares(burstableMilliCpu) }],
      [this.qosInfo.bestEffort, { cpuShares: CPU_MIN_SHARES }],
    ];
    for (const [name, resources] of configs) {
      try {
        await cm.update(name, resources);
      } catch (err) {
        this.logger.error('Failed to update QoS cgroup configuration', err);
        throw err;
      }
    }
    this.lastQOSUpdateMs = this.clock.now();
    this.logger.v(4).info('Updated QoS cgroup configuration');
  }

  /** Go: enforceNodeAllocatableCgroups. */
  private async enforceNodeAllocatableCgroups(): Promise<void> {
    const nodeRef = this.nodeRef();
    if (this.cgroupRoot.length > 0 && this.cgroupsPerQOS) {
      const config = this.kubepodsConfig();
      const attempt = async (): Promise<void> => {
        try {
          await this.manager().update(this.cgroupRoot, config);
          this.recorder.event(nodeRef, 'Normal', KubeletEventReason.SuccessfulNodeAllocatableEnforcement, 'Updated Node Allocatable limit across pods');
        } catch (err) {
          const message = `Failed to update Node Allocatable Limits ${quoteCgroupName(this.cgroupRoot)}: ${(err as Error).message}`;
          this.recorder.event(nodeRef, 'Warning', KubeletEventReason.FailedNodeAllocatableEnforcement, message);
          // Go: retried every minute until it works (pod evictions may bring usage below the new limit).
          if (this.started) {
            const timer = this.clock.setTimeout(() => {
              this.timers = this.timers.filter((t) => t !== timer);
              void attempt();
            }, NODE_ALLOCATABLE_RETRY_INTERVAL_MS);
            this.timers.push(timer);
          }
        }
      };
      await attempt();
    }
    const reserved: Array<[string, string | undefined, Record<string, string> | undefined, string]> = [
      [NODE_ALLOCATABLE_ENFORCEMENT.systemReserved, this.opts.systemReservedCgroup, this.opts.systemReserved, 'System'],
      [NODE_ALLOCATABLE_ENFORCEMENT.kubeReserved, this.opts.kubeReservedCgroup, this.opts.kubeReserved, 'Kube'],
    ];
    for (const [key, cgroup, limits, label] of reserved) {
      if (!this.enforce.includes(key) || cgroup === undefined) continue;
      this.logger.v(2).info(`Enforcing ${label.toLowerCase()} reserved on cgroup`, { cgroup, limits });
      try {
        await this.enforceExistingCgroup(this.manager().cgroupName(cgroup), limits);
      } catch (err) {
        const message = `Failed to enforce ${label} Reserved Cgroup Limits on ${JSON.stringify(cgroup)}: ${(err as Error).message}`;
        this.recorder.event(nodeRef, 'Warning', KubeletEventReason.FailedNodeAllocatableEnforcement, message);
        this.recordError('enforce', new Error(message), cgroup);
        throw new Error(message, { cause: err });
      }
      this.recorder.event(nodeRef, 'Normal', KubeletEventReason.SuccessfulNodeAllocatableEnforcement, `Updated limits on ${label.toLowerCase()} reserved cgroup ${cgroup}`);
    }
  }

  /** Go: enforceExistingCgroup: the reserved cgroup must exist; it gets the reserved amounts as its limits. */
  private async enforceExistingCgroup(name: CgroupName, limits: Record<string, string> | undefined): Promise<void> {
    if (limits === undefined) throw new Error(`${quoteCgroupName(name)} cgroup is not config properly`);
    const parsed = parseReserved('reserved', limits);
    const config: ResourceConfig = {};
    const memory = parsed.get('memory');
    if (memory) config.memoryLimitBytes = memory.value();
    const cpu = parsed.get('cpu');
    if (cpu) config.cpuShares = milliCpuToShares(cpu.milliValue());
    const pid = parsed.get('pid');
    if (pid) config.pidsLimit = pid.value();
    const cm = this.manager();
    this.logger.v(4).info('Enforcing limits on cgroup', { cgroupName: formatCgroupName(name), cpuShares: config.cpuShares, memory: config.memoryLimitBytes, pids: config.pidsLimit });
    if (!(await cm.exists(name))) throw new Error(`${quoteCgroupName(name)} cgroup does not exist`);
    await cm.update(name, config);
  }
}
