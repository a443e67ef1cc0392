// Runs one probe of a container and reports it (Go: pkg/kubelet/prober/prober.go).
import type { V1Container, V1Pod, V1PodStatus, V1Probe } from '@kubernetes/client-node';
import {
  containerSpecFieldPath,
  errorText,
  KubeletEventReason,
  noopEventRecorder,
  defaultLogger,
  parseContainerID,
  realClock,
  type Clock,
  type EventRecorder,
  type Logger,
} from '@kubelet-ts/core';
import { execProbe, expandCommand, type ExecRunner } from './exec.js';
import { grpcProbe } from './grpc.js';
import { httpGetUrl, httpProbe } from './http.js';
import { resolveContainerPort } from './port.js';
import { DEFAULT_PROBE_USER_AGENT, probeUserAgent, type ProbeResponse } from './probe.js';
import { tcpProbe } from './tcp.js';

export type ProbeType = 'liveness' | 'readiness' | 'startup';

/** Go: probeType.String(). */
export function probeTypeName(type: ProbeType): 'Liveness' | 'Readiness' | 'Startup' {
  return type === 'liveness' ? 'Liveness' : type === 'readiness' ? 'Readiness' : 'Startup';
}

/** Go: maxProbeRetries, attempts when a probe could not be run at all. */
export const MAX_PROBE_RETRIES = 3;

/** What the probe workers call; `Prober` implements it, `FakeProber` (./testing) too. */
export interface ContainerProber {
  /**
   * Probes a container once (with retries when the probe cannot be run) and records events;
   * resolves `success` (a warning counts as success) or `failure`. Never rejects.
   */
  probe(type: ProbeType, pod: V1Pod, status: V1PodStatus, container: V1Container, containerId: string): Promise<'success' | 'failure'>;
}

export interface ProberOptions {
  /** Runs exec probes (CRI ExecSync); without it exec probes fail with "no exec runner configured". */
  runner?: ExecRunner;
  recorder?: EventRecorder;
  logger?: Logger;
  clock?: Clock;
  /** The kubelet version for the User-Agent `kube-probe/<major>.<minor>`. */
  kubeletVersion?: string;
  /** Overrides the User-Agent entirely. */
  userAgent?: string;
  /** Go: followNonLocalRedirects, false in the kubelet. */
  followNonLocalRedirects?: boolean;
  /**
   * Answers every probe instead of running its handler (exec, http, tcp, grpc): for containers that are simulated
   * (kubelet fleet), whose pod IPs nobody listens on. Results, events and logs are then as for a real probe.
   */
  simulate?: (type: ProbeType, pod: V1Pod, container: V1Container, containerId: string) => Promise<ProbeResponse> | ProbeResponse;
}

/** The probe spec of a type in a container, undefined when it has none. */
export function probeSpecOf(container: V1Container, type: ProbeType): V1Probe | undefined {
  return type === 'liveness' ? container.livenessProbe : type === 'readiness' ? container.readinessProbe : container.startupProbe;
}

/**
 * Runs container probes with the Go kubelet's semantics and reports them as events on the pod:
 * `Unhealthy` "Liveness probe failed: <output>" for a failure, `ProbeWarning` "Readiness probe
 * warning: <output>" for a warning (counted as success), `Unhealthy` "Startup probe errored: <err>"
 * when a probe could not be run (counted as failure). Every HTTP probe opens its own connection
 * (Go: keep-alives disabled) and closes it.
 */
export class Prober implements ContainerProber {
  private readonly runner?: ExecRunner;
  private readonly recorder: EventRecorder;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly userAgent: string;
  private readonly followNonLocalRedirects: boolean;
  private readonly simulate: ProberOptions['simulate'];

  constructor(opts: ProberOptions = {}) {
    this.simulate = opts.simulate;
    this.runner = opts.runner;
    this.recorder = opts.recorder ?? noopEventRecorder;
    this.logger = opts.logger ?? defaultLogger;
    this.clock = opts.clock ?? realClock;
    this.userAgent = opts.userAgent ?? (opts.kubeletVersion ? probeUserAgent(opts.kubeletVersion) : DEFAULT_PROBE_USER_AGENT);
    this.followNonLocalRedirects = opts.followNonLocalRedirects ?? false;
  }

  async probe(type: ProbeType, pod: V1Pod, status: V1PodStatus, container: V1Container, containerId: string): Promise<'success' | 'failure'> {
    const spec = probeSpecOf(container, type);
    if (!spec) return 'success';
    let response: ProbeResponse = { result: 'unknown', output: '' };
    for (let attempt = 0; attempt < MAX_PROBE_RETRIES; attempt++) {
      response = this.simulate ? await this.simulate(type, pod, container, containerId) : await this.runProbe(spec, status, container, containerId, pod);
      if (response.result !== 'unknown') break;
    }
    const kv = (): { probeType: string; pod: string; containerName: string } => ({
      probeType: probeTypeName(type),
      pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`,
      containerName: container.name,
    });
    if (response.result === 'success') {
      // The common case, once a second per probe: nothing is built unless -v=3 logs it.
      const v3 = this.logger.v(3);
      if (v3.enabled) v3.info('Probe succeeded', kv());
      return 'success';
    }
    const details = { containerName: container.name, fieldPath: containerSpecFieldPath(pod, container.name) };
    const name = probeTypeName(type);
    switch (response.result) {
      case 'warning':
        this.recorder.event(pod, 'Warning', KubeletEventReason.ContainerProbeWarning, `${name} probe warning: ${response.output}`, details);
        this.logger.v(3).info('Probe succeeded with a warning', { ...kv(), output: response.output });
        return 'success';
      case 'failure':
        this.recorder.event(pod, 'Warning', KubeletEventReason.ContainerUnhealthy, `${name} probe failed: ${response.output}`, details);
        this.logger.v(1).info('Probe failed', { ...kv(), probeResult: 'failure', output: response.output });
        return 'failure';
      default:
        this.recorder.event(pod, 'Warning', KubeletEventReason.ContainerUnhealthy, `${name} probe errored: ${response.output}`, details);
        this.logger.v(1).info('Probe errored', { ...kv(), err: response.output });
        return 'failure';
    }
  }

  /** Runs a probe spec once against a container (Go: runProbe); never throws. */
  async runProbe(spec: V1Probe, status: V1PodStatus, container: V1Container, containerId: string, pod?: V1Pod): Promise<ProbeResponse> {
    try {
      const timeoutSeconds = spec.timeoutSeconds && spec.timeoutSeconds > 0 ? spec.timeoutSeconds : 1;
      const podIP = status.podIP ?? '';
      if (spec.exec) {
        if (!this.runner) return { result: 'unknown', output: 'no exec runner configured' };
        const command = expandCommand(spec.exec.command ?? [], container.env);
        return await execProbe(this.runner, parseContainerID(containerId).id, command, timeoutSeconds);
      }
      if (spec.httpGet) {
        const url = httpGetUrl(spec.httpGet, container, podIP);
        return await httpProbe({
          url,
          headers: spec.httpGet.httpHeaders,
          timeoutSeconds,
          userAgent: this.userAgent,
          followNonLocalRedirects: this.followNonLocalRedirects,
          clock: this.clock,
        });
      }
      if (spec.tcpSocket) {
        const port = resolveContainerPort(spec.tcpSocket.port, container);
        return await tcpProbe({ host: spec.tcpSocket.host || podIP, port, timeoutSeconds, clock: this.clock });
      }
      if (spec.grpc) {
        return await grpcProbe({ host: podIP, port: spec.grpc.port, service: spec.grpc.service, timeoutSeconds, userAgent: this.userAgent });
      }
      const podText = pod ? `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}` : '';
      return { result: 'unknown', output: `missing probe handler for ${podText}:${container.name}` };
    } catch (err) {
      return { result: 'unknown', output: errorText(err) };
    }
  }

  /** Kept for callers that close a Prober: HTTP probes hold no connection between probes (Go disables keep-alives). */
  async close(): Promise<void> {
    // Nothing to release.
  }
}
