// One probe loop per (pod, container, probe type) (Go: pkg/kubelet/prober/worker.go).
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus, V1Probe } from '@kubernetes/client-node';
import type { Clock, Logger, TimerHandle } from '@kubelet-ts/core';
import { probeSpecOf, probeTypeName, type ContainerProber, type ProbeType } from './prober.js';
import type { ProbeResult, ResultsManager } from './results.js';

/** The API server's defaults for a probe (pods from files may lack them). */
export interface ProbeSettings {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/** A probe's settings with the API defaults for unset or invalid fields (period 10 s, timeout 1 s, thresholds 1 and 3). */
export function probeSettings(spec: V1Probe): ProbeSettings {
  const positive = (v: number | undefined, d: number): number => (v !== undefined && v !== null && v > 0 ? v : d);
  return {
    initialDelaySeconds: spec.initialDelaySeconds && spec.initialDelaySeconds > 0 ? spec.initialDelaySeconds : 0,
    periodSeconds: positive(spec.periodSeconds, 10),
    timeoutSeconds: positive(spec.timeoutSeconds, 1),
    successThreshold: positive(spec.successThreshold, 1),
    failureThreshold: positive(spec.failureThreshold, 3),
  };
}

/** Which probe a worker runs, for metrics (Go: the prober_probe_total labels but the result). */
export interface ProbeWorkerInfo {
  probeType: ProbeType;
  containerName: string;
  podName: string;
  podNamespace: string;
  podUID: string;
}

/** What a worker needs from its manager. */
export interface WorkerContext {
  clock: Clock;
  logger: Logger;
  random: () => number;
  /** When the manager was created (Go: manager.start), for the initial jitter. */
  startedAt: number;
  prober: ContainerProber;
  getPodStatus(podUID: string): V1PodStatus | undefined;
  resultsFor(type: ProbeType): ResultsManager;
  removeWorker(worker: Worker): void;
  /** Called with the result of every probe run, before the thresholds apply. */
  onProbeResult?(probe: ProbeWorkerInfo, result: ProbeResult): void;
  /** Called once when the worker has ended. */
  onWorkerStopped?(probe: ProbeWorkerInfo): void;
}

/**
 * Periodically probes one container (Go: worker). It reads the container's id and state from the
 * pod status (getPodStatus), so a restarted container (a new id) gets a fresh result; stops when
 * the pod is terminated, the container will not restart, or stop() is called.
 */
export class Worker {
  readonly podUID: string;
  readonly spec: V1Probe;
  readonly settings: ProbeSettings;
  /** Go: initialValue: readiness starts failed, liveness succeeded, startup unknown. */
  readonly initialValue: ProbeResult;
  private readonly results: ResultsManager;
  /** The last container id seen (`type://id`), '' before the container exists. */
  private containerId = '';
  private lastResult: ProbeResult | undefined;
  private resultRun = 0;
  private onHold = false;
  private stopped = false;
  private wake?: () => void;
  private pendingWake = false;
  private loop?: Promise<void>;
  /** The running container's startedAt as last read and its time, so a string is parsed once, not every period. */
  private startedAtSeen: unknown;
  private startedAtMs = Number.NaN;
  /** Probes run (for tests and benchmarks). */
  probes = 0;

  constructor(
    private readonly ctx: WorkerContext,
    readonly probeType: ProbeType,
    readonly pod: V1Pod,
    readonly container: V1Container,
  ) {
    this.podUID = pod.metadata?.uid ?? '';
    this.spec = probeSpecOf(container, probeType) as V1Probe;
    this.settings = probeSettings(this.spec);
    this.results = ctx.resultsFor(probeType);
    this.initialValue = probeType === 'readiness' ? 'failure' : probeType === 'liveness' ? 'success' : 'unknown';
  }

  /** Starts the loop; returns at once. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Asks the loop to end after the probe in flight; the worker then removes itself. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.signal();
  }

  /** Requests an immediate probe (Go: manualTriggerCh), at most one pending. */
  trigger(): void {
    this.signal();
  }

  /** Resolves when the loop has ended. */
  done(): Promise<void> {
    return this.loop ?? Promise.resolve();
  }

  /** The container id this worker last saw. */
  get currentContainerId(): string {
    return this.containerId;
  }

  private signal(): void {
    if (this.wake) {
      const wake = this.wake;
      this.wake = undefined;
      wake();
    } else this.pendingWake = true;
  }

  private waitForWake(): Promise<void> {
    if (this.pendingWake) {
      this.pendingWake = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => (this.wake = resolve));
  }

  private async run(): Promise<void> {
    const { clock } = this.ctx;
    const periodMs = this.settings.periodSeconds * 1000;
    let ticker: TimerHandle | undefined;
    try {
      // Go: if the kubelet started recently, wait a random part of the period so probes spread out.
      if (periodMs > clock.since(this.ctx.startedAt)) {
        const delay = this.ctx.random() * periodMs;
        let jitterTimer: TimerHandle | undefined;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          jitterTimer = clock.setTimeout(() => this.signal(), delay);
        });
        jitterTimer?.cancel();
        this.pendingWake = false;
        this.wake = undefined;
        if (this.stopped) return;
      }
      ticker = clock.setInterval(() => this.signal(), periodMs);
      while (!this.stopped && (await this.doProbe())) {
        if (this.stopped) break;
        await this.waitForWake();
      }
    } finally {
      ticker?.cancel();
      if (this.containerId) this.results.remove(this.containerId);
      this.ctx.removeWorker(this);
      this.ctx.onWorkerStopped?.(this.info());
    }
  }

  /** Probes once and records the result; false when the worker should end (Go: doProbe). */
  async doProbe(): Promise<boolean> {
    try {
      return await this.doProbeUnsafe();
    } catch (err) {
      this.ctx.logger.error('Probe worker failed; going on', err, this.kv());
      return true;
    }
  }

  private kv(): Record<string, unknown> {
    return { probeType: probeTypeName(this.probeType), pod: `${this.pod.metadata?.namespace ?? ''}/${this.pod.metadata?.name ?? ''}`, containerName: this.container.name };
  }

  private async doProbeUnsafe(): Promise<boolean> {
    const { clock, logger } = this.ctx;
    const status = this.ctx.getPodStatus(this.podUID);
    if (!status) {
      // Either the pod has not been created yet, or it was already deleted.
      logger.v(3).info('No status for pod', this.kv());
      return true;
    }
    // The worker ends when the pod is terminated.
    if (status.phase === 'Failed' || status.phase === 'Succeeded') {
      logger.v(3).info('Pod is terminated, exiting probe worker', { ...this.kv(), phase: status.phase });
      return false;
    }
    let c = findStatus(status.containerStatuses, this.container.name);
    if (!c?.containerID) {
      c = findStatus(status.initContainerStatuses, this.container.name);
      if (!c?.containerID) {
        logger.v(3).info('Probe target container not found', this.kv());
        return true; // wait for more information
      }
    }
    if (this.containerId !== c.containerID) {
      if (this.containerId) this.results.remove(this.containerId);
      this.containerId = c.containerID as string;
      this.results.set(this.containerId, this.initialValue, this.pod);
      this.onHold = false; // a new container: probe again
    }
    if (this.onHold) return true; // on hold until there is a new container

    const running = c.state?.running;
    if (!running) {
      logger.v(3).info('Non-running container probed', this.kv());
      if (this.containerId) this.results.set(this.containerId, 'failure', this.pod);
      // Abort if the container will not be restarted.
      return !c.state?.terminated || this.containerRestarts();
    }

    // Graceful shutdown of the pod: quiet liveness/startup results from here on.
    if (this.pod.metadata?.deletionTimestamp && (this.probeType === 'liveness' || this.probeType === 'startup')) {
      logger.v(3).info('Pod deletion requested, setting probe result to success', this.kv());
      this.results.set(this.containerId, 'success', this.pod);
      return false;
    }

    // Probe disabled for initialDelaySeconds (Go truncates the seconds since start).
    const startedAt = this.startedAtOf(running.startedAt);
    if (Number.isFinite(startedAt) && Math.trunc(clock.since(startedAt) / 1000) < this.settings.initialDelaySeconds) return true;

    if (c.started) {
      // Startup probing stops once the container has started; the worker stays for a restart.
      if (this.probeType === 'startup') return true;
    } else if (this.probeType !== 'startup') {
      return true; // other probes wait until the container has started
    }

    const result = await this.ctx.prober.probe(this.probeType, this.pod, status, this.container, this.containerId);
    this.probes++;
    this.ctx.onProbeResult?.(this.info(), result);

    if (this.lastResult === result) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    if (
      (result === 'failure' && this.resultRun < this.settings.failureThreshold) ||
      (result === 'success' && this.resultRun < this.settings.successThreshold)
    ) {
      return true; // below threshold: leave the state unchanged
    }
    this.results.set(this.containerId, result, this.pod);

    if ((this.probeType === 'liveness' || this.probeType === 'startup') && result === 'failure') {
      // The container will be restarted: stop probing until a new container id shows up.
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }

  /** Epoch ms of a status's startedAt (a Date or an RFC 3339 string), NaN when unset. */
  private startedAtOf(value: Date | string | undefined): number {
    if (!value) return Number.NaN;
    if (value instanceof Date) return value.getTime();
    if (value !== this.startedAtSeen) {
      this.startedAtSeen = value;
      this.startedAtMs = new Date(value).getTime();
    }
    return this.startedAtMs;
  }

  /** This worker's probe, for metrics. */
  info(): ProbeWorkerInfo {
    const meta = this.pod.metadata;
    return { probeType: this.probeType, containerName: this.container.name, podName: meta?.name ?? '', podNamespace: meta?.namespace ?? '', podUID: this.podUID };
  }

  /** Whether a terminated container will run again (pod or container restart policy). */
  private containerRestarts(): boolean {
    if (this.container.restartPolicy === 'Always') return true; // a sidecar
    return this.pod.spec?.restartPolicy !== 'Never';
  }
}

function findStatus(statuses: V1ContainerStatus[] | undefined, name: string): V1ContainerStatus | undefined {
  return statuses?.find((s) => s.name === name);
}
