// The probe manager (Go: pkg/kubelet/prober/prober_manager.go).
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isRestartableInitContainer, defaultLogger, realClock, type Clock, type EventRecorder, type Logger } from '@kubelet-ts/core';
import type { ExecRunner } from './exec.js';
import { Prober, probeTypeName, type ContainerProber, type ProbeType } from './prober.js';
import { ResultsManager, type ProbeResult } from './results.js';
import { Worker, type ProbeWorkerInfo, type WorkerContext } from './worker.js';

export interface ProbeManagerOptions {
  /**
   * The pod's latest status as the status manager has it (Go: statusManager.GetPodStatus): workers
   * read container ids, states, `started` and the pod IP from it. Undefined when unknown.
   */
  getPodStatus: (podUID: string) => V1PodStatus | undefined;
  /** Runs exec probes: a CRI RuntimeService (`execSync(containerId, cmd, timeoutSeconds)`). */
  runner?: ExecRunner;
  /** Where Unhealthy and ProbeWarning events go. */
  recorder?: EventRecorder;
  clock?: Clock;
  logger?: Logger;
  /** The kubelet version for the probes' User-Agent `kube-probe/<major>.<minor>`. */
  kubeletVersion?: string;
  /** Runs the probes; default a Prober per probe type (separate HTTP pools, as Go). */
  prober?: ContainerProber;
  livenessManager?: ResultsManager;
  readinessManager?: ResultsManager;
  startupManager?: ResultsManager;
  /** Random numbers in [0, 1) for the initial jitter; default Math.random. */
  random?: () => number;
  /**
   * Called with the result of every probe a worker runs, before the success/failure thresholds apply (Go:
   * prober_probe_total, counted in worker.doProbe).
   */
  onProbeResult?: (probe: ProbeWorkerInfo, result: ProbeResult) => void;
  /** Called once a probe worker has ended (Go deletes the worker's prober_probe_total series then). */
  onProbeWorkerStopped?: (probe: ProbeWorkerInfo) => void;
}

/** The probe manager's interface (Go: prober.Manager). */
export interface ProbeManagerInterface {
  addPod(pod: V1Pod): void;
  stopLivenessAndStartup(pod: V1Pod): void;
  removePod(pod: V1Pod): void;
  cleanupPods(desiredPodUIDs: Set<string>): void;
  updatePodStatus(pod: V1Pod | string, podStatus: V1PodStatus): void;
  stop(): Promise<void>;
}

function key(podUID: string, containerName: string, type: ProbeType): string {
  return `${podUID}/${containerName}/${type}`;
}

const PROBE_TYPES_IN_ORDER: ProbeType[] = ['startup', 'readiness', 'liveness'];

/**
 * Creates a probe worker for every probe of every container (and sidecar init container) of a pod
 * (addPod), keeps their results in the liveness, readiness and startup results managers, and sets
 * `started` and `ready` on container statuses from them (updatePodStatus). Liveness and startup
 * failures reach the runtime manager through `livenessManager.lookup` / `startupManager.lookup`;
 * subscribe to `readinessManager` (or call updatePodStatus) for readiness.
 */
export class ProbeManager implements ProbeManagerInterface {
  readonly livenessManager: ResultsManager;
  readonly readinessManager: ResultsManager;
  readonly startupManager: ResultsManager;
  private readonly workers = new Map<string, Worker>();
  private readonly ctxFor: Record<ProbeType, WorkerContext>;
  private readonly probers: ContainerProber[];
  private readonly logger: Logger;
  private stopped = false;

  constructor(opts: ProbeManagerOptions) {
    const clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.livenessManager = opts.livenessManager ?? new ResultsManager();
    this.readinessManager = opts.readinessManager ?? new ResultsManager();
    this.startupManager = opts.startupManager ?? new ResultsManager();
    const proberFor = (): ContainerProber =>
      opts.prober ?? new Prober({ runner: opts.runner, recorder: opts.recorder, logger: this.logger, clock, kubeletVersion: opts.kubeletVersion });
    // Go keeps one HTTP transport per probe type so probes of one kind do not share connections.
    const probers = { liveness: proberFor(), readiness: proberFor(), startup: proberFor() };
    this.probers = [...new Set(Object.values(probers))];
    const startedAt = clock.now();
    const base = {
      clock,
      logger: this.logger,
      random: opts.random ?? Math.random,
      startedAt,
      getPodStatus: opts.getPodStatus,
      resultsFor: (type: ProbeType) => this.resultsFor(type),
      removeWorker: (worker: Worker) => this.removeWorker(worker),
      onProbeResult: opts.onProbeResult,
      onWorkerStopped: opts.onProbeWorkerStopped,
    };
    this.ctxFor = {
      liveness: { ...base, prober: probers.liveness },
      readiness: { ...base, prober: probers.readiness },
      startup: { ...base, prober: probers.startup },
    };
  }

  /** The results manager of a probe type. */
  resultsFor(type: ProbeType): ResultsManager {
    return type === 'liveness' ? this.livenessManager : type === 'readiness' ? this.readinessManager : this.startupManager;
  }

  /** Starts a worker for every probe of the pod's containers and sidecars that has none (Go: AddPod). */
  addPod(pod: V1Pod): void {
    if (this.stopped) return;
    const uid = pod.metadata?.uid ?? '';
    const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(isRestartableInitContainer)];
    for (const container of containers) {
      for (const type of PROBE_TYPES_IN_ORDER) {
        const spec = type === 'startup' ? container.startupProbe : type === 'readiness' ? container.readinessProbe : container.livenessProbe;
        if (!spec) continue;
        const k = key(uid, container.name, type);
        if (this.workers.has(k)) {
          this.logger.v(4).info(`${probeTypeName(type)} probe already exists for container`, { pod: podName(pod), containerName: container.name });
          continue;
        }
        const worker = new Worker(this.ctxFor[type], type, pod, container);
        this.workers.set(k, worker);
        worker.start();
      }
    }
  }

  /** Stops the liveness and startup workers of a terminating pod (Go: StopLivenessAndStartup). */
  stopLivenessAndStartup(pod: V1Pod): void {
    this.stopPodWorkers(pod, ['liveness', 'startup']);
  }

  /** Stops every worker of the pod; their results are dropped as they end (Go: RemovePod). */
  removePod(pod: V1Pod): void {
    this.stopPodWorkers(pod, ['readiness', 'liveness', 'startup']);
  }

  /** Stops the workers of every pod not in desiredPodUIDs (Go: CleanupPods). */
  cleanupPods(desiredPodUIDs: Set<string>): void {
    for (const worker of this.workers.values()) if (!desiredPodUIDs.has(worker.podUID)) worker.stop();
  }

  /**
   * Sets `started` and `ready` on the status's container statuses from the probe results (Go:
   * UpdatePodStatus): a running container is started when its startup probe succeeded or it has
   * none; a started, running container is ready when its readiness probe succeeded or it has none
   * (a readiness worker without a result yet is triggered at once). A regular init container is
   * ready when it exited 0; a sidecar is treated as a container. Mutates podStatus.
   */
  updatePodStatus(pod: V1Pod | string, podStatus: V1PodStatus): void {
    const podObj = typeof pod === 'string' ? undefined : pod;
    const uid = typeof pod === 'string' ? pod : (pod.metadata?.uid ?? '');
    for (const c of podStatus.containerStatuses ?? []) {
      const started = this.isContainerStarted(uid, c);
      c.started = started;
      if (!started) continue;
      c.ready = this.isContainerReady(uid, c);
    }
    const initContainers = podObj?.spec?.initContainers ?? [];
    for (const c of podStatus.initContainerStatuses ?? []) {
      const started = this.isContainerStarted(uid, c);
      c.started = started;
      const spec = initContainers.find((ic) => ic.name === c.name);
      const restartable = spec ? isRestartableInitContainer(spec) : this.hasAnyWorker(uid, c.name);
      if (!restartable) {
        if (c.state?.terminated && c.state.terminated.exitCode === 0) c.ready = true;
        continue;
      }
      if (!started) continue;
      c.ready = this.isContainerReady(uid, c);
    }
  }

  /** Stops every worker and waits for them to end; closes the probers' connection pools. */
  async stop(): Promise<void> {
    this.stopped = true;
    const workers = [...this.workers.values()];
    for (const worker of workers) worker.stop();
    await Promise.all(workers.map((w) => w.done()));
    for (const prober of this.probers) {
      if (prober instanceof Prober) await prober.close();
    }
  }

  /** Number of live workers. */
  workerCount(): number {
    return this.workers.size;
  }

  /** The worker of a probe, if any (for tests and introspection). */
  getWorker(podUID: string, containerName: string, type: ProbeType): Worker | undefined {
    return this.workers.get(key(podUID, containerName, type));
  }

  private isContainerStarted(uid: string, c: V1ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = c.containerID ? this.startupManager.get(c.containerID) : undefined;
    if (result !== undefined) return result === 'success';
    // A startup probe that has not run yet: not started. No startup probe: started.
    return !this.workers.has(key(uid, c.name, 'startup'));
  }

  private isContainerReady(uid: string, c: V1ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = c.containerID ? this.readinessManager.get(c.containerID) : undefined;
    if (result !== undefined) return result === 'success';
    const worker = this.workers.get(key(uid, c.name, 'readiness'));
    if (!worker) return true; // no readiness probe: always ready
    worker.trigger(); // run the readiness probe now to update the state
    return false;
  }

  private hasAnyWorker(uid: string, name: string): boolean {
    return PROBE_TYPES_IN_ORDER.some((type) => this.workers.has(key(uid, name, type)));
  }

  private stopPodWorkers(pod: V1Pod, types: ProbeType[]): void {
    const uid = pod.metadata?.uid ?? '';
    const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
    for (const container of containers) {
      for (const type of types) this.workers.get(key(uid, container.name, type))?.stop();
    }
  }

  private removeWorker(worker: Worker): void {
    const k = key(worker.podUID, worker.container.name, worker.probeType);
    if (this.workers.get(k) === worker) this.workers.delete(k);
  }
}

function podName(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}
