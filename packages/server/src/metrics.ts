// The kubelet's Prometheus metrics (Go: pkg/kubelet/metrics, pkg/kubelet/server/metrics, the prober's
// ProberResults, pkg/volume/util's storage operation metrics and client-go's rest_client_requests_total),
// with the Go kubelet v1.20's names, help texts, label names and buckets.
import { readFileSync, readdirSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, exponentialBuckets } from 'prom-client';
import type { EventLoopMonitor, RuntimePod } from '@kubelet-ts/core';
import type { ImageService, RuntimeService } from '@kubelet-ts/cri-client';

/** Go's metrics.DefBuckets (prometheus.DefBuckets). */
export const DEF_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** kubelet_runtime_operations_duration_seconds: Go's ExponentialBuckets(.005, 2.5, 14). */
export const RUNTIME_OPERATION_BUCKETS = exponentialBuckets(0.005, 2.5, 14);
/** storage_operation_duration_seconds. */
export const STORAGE_OPERATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

/** component-base prefixes the help of every ALPHA metric with its stability level. */
const alpha = (help: string) => `[ALPHA] ${help}`;

/** The probe types as the prober names them (Go: probeType.String()). */
const PROBE_TYPE_LABEL = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' } as const;
/** Go's probeResultSuccessful / probeResultFailed / probeResultUnknown. */
const PROBE_RESULT_LABEL = { success: 'successful', failure: 'failed', unknown: 'unknown' } as const;

/** One probe worker's identity: the labels of prober_probe_total but the result. */
export interface ProbeMetricLabels {
  probeType: keyof typeof PROBE_TYPE_LABEL;
  container: string;
  pod: string;
  namespace: string;
  podUid: string;
}

/** The request a kubelet server is about to serve (see KubeletMetrics.startHttpRequest). */
export interface HttpRequestInfo {
  /** The request's method; one Go does not know is counted as 'other'. */
  method: string;
  /**
   * The URL path as requested (query string allowed), bucketed like Go's getMetricBucket: `metrics/<x>` or the
   * first segment when the servers route it, 'other' otherwise.
   */
  path: string;
  /** 'readwrite' for the authenticated server (10250), 'readonly' for 10255. */
  serverType: 'readonly' | 'readwrite';
  /**
   * Set by a caller that bucketed method and path itself (the server's HttpRequestLabels): the labels are then
   * taken as given.
   */
  longRunning?: boolean;
}

/** What the instrumented CRI wrappers record (KubeletMetrics implements it). */
export interface RuntimeOperationsRecorder {
  /** One CRI call finished (Go: recordOperation + recordError). */
  recordRuntimeOperation(operation: string, durationMs: number, failed: boolean): void;
  /** RunPodSandbox finished (Go: kubelet_run_podsandbox_duration_seconds / _errors_total). */
  recordRunPodSandbox(runtimeHandler: string, durationMs: number, failed: boolean): void;
  /** A monotonic clock in ms; default performance.now(). */
  now?(): number;
}

export interface KubeletMetricsOptions {
  /** Sets kubelet_node_name{node} to 1 (Go: SetNodeName). */
  nodeName?: string;
  /** A monotonic clock in ms for the durations measured here (HTTP requests, CRI calls); default performance.now(). */
  now?: () => number;
  /** Registers process_* metrics as Go's process collector exposes them (default true). */
  processMetrics?: boolean;
  /**
   * Registers prom-client's Node.js runtime metrics (nodejs_eventloop_lag_*, nodejs_eventloop_utilization_ratio,
   * nodejs_heap_*, nodejs_active_*) with the event loop figures from this monitor (see registerNodejsMetrics).
   * Default: none.
   */
  eventLoop?: EventLoopStatsSource;
  /**
   * The first path segments (or `metrics/<x>`) the servers route; any other path is counted as 'other' in the
   * kubelet_http_* metrics, so a client cannot grow their cardinality (Go: metricBuckets). Default: the kubelet's routes.
   */
  httpPathBuckets?: Iterable<string>;
}

/** The paths the Go kubelet's servers register as metric buckets. */
const DEFAULT_HTTP_PATH_BUCKETS = [
  'healthz',
  'pods',
  'runningpods',
  'stats',
  'spec',
  'logs',
  'containerLogs',
  'configz',
  'debug',
  'run',
  'exec',
  'attach',
  'portForward',
  'checkpoint',
  'cri',
  'metrics',
  'metrics/cadvisor',
  'metrics/probes',
  'metrics/resource',
];
/** Go's metricMethodBuckets. */
const HTTP_METHOD_BUCKETS = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT']);
/** Go's longRunningRequestPathMap. */
const LONG_RUNNING_PATHS = new Set(['exec', 'attach', 'portforward', 'debug']);
/** The container states of kubelet_running_containers (Go: kubecontainer.State). */
const CONTAINER_STATES = ['created', 'running', 'exited', 'unknown'] as const;

/**
 * Go's trimURLPath/getURLRootPath: `metrics/<x>` for paths under /metrics/, otherwise the first path segment.
 */
export function httpMetricPath(path: string): string {
  const query = path.indexOf('?');
  const parts = (query >= 0 ? path.slice(0, query) : path).replace(/^\//, '').split('/');
  if (parts[0] === 'metrics' && parts.length > 1 && parts[1] !== '') return `metrics/${parts[1]}`;
  return parts[0];
}

/** A claim-backed volume's usage, as the Summary API gives it (for kubelet_volume_stats_*). */
export interface ClaimVolumeStats {
  namespace: string;
  claimName: string;
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
}

/**
 * The kubelet's metrics in two prom-client registries: `registry` is what /metrics serves, `probeRegistry`
 * what /metrics/probes serves (Go registers prober_probe_total in its own registry). Components report through
 * the methods below (durations in ms, converted to seconds) or through the CRI wrappers
 * (instrumentRuntimeService / instrumentImageService); gauges of the runtime's state are set by the PLEG's relist
 * (setRunningPods) or computed at scrape time (watchPleg).
 *
 * Where the Go kubelet v1.20 has a metric it keeps its exact name, help, labels and buckets; started_pods and
 * started_containers come from later Go releases.
 */
export class KubeletMetrics implements RuntimeOperationsRecorder {
  /** /metrics. */
  readonly registry = new Registry();
  /** /metrics/probes. */
  readonly probeRegistry = new Registry();

  readonly nodeName: Gauge<'node'>;
  readonly containersPerPodCount: Histogram;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly podStartDuration: Histogram;
  readonly podWorkerStartDuration: Histogram;
  readonly plegRelistDuration: Histogram;
  readonly plegDiscardEvents: Counter;
  readonly plegRelistInterval: Histogram;
  readonly plegLastSeen: Gauge;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly runPodSandboxDuration: Histogram<'runtime_handler'>;
  readonly runPodSandboxErrors: Counter<'runtime_handler'>;
  readonly runningPods: Gauge;
  readonly runningContainers: Gauge<'container_state'>;
  readonly startedPods: Counter;
  readonly startedPodsErrors: Counter;
  readonly startedContainers: Counter<'container_type'>;
  readonly startedContainersErrors: Counter<'container_type' | 'code'>;
  readonly httpRequests: Counter<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly httpRequestsDuration: Histogram<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly httpInflightRequests: Gauge<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly storageOperationDuration: Histogram<'volume_plugin' | 'operation_name'>;
  readonly storageOperationErrors: Counter<'volume_plugin' | 'operation_name'>;
  readonly storageOperationStatus: Counter<'volume_plugin' | 'operation_name' | 'status'>;
  readonly restClientRequests: Counter<'code' | 'method' | 'host'>;
  readonly proberResults: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;

  private readonly clock: () => number;
  private readonly httpPathBuckets: Set<string>;
  private plegSource?: { lastRelistTime(): number | undefined; droppedEvents?: () => number };
  private plegDroppedSeen = 0;
  private readonly disposers: Array<() => void> = [];

  constructor(options: KubeletMetricsOptions = {}) {
    this.clock = options.now ?? (() => performance.now());
    this.httpPathBuckets = new Set(options.httpPathBuckets ?? DEFAULT_HTTP_PATH_BUCKETS);
    const registers = [this.registry];

    this.nodeName = new Gauge({ name: 'kubelet_node_name', help: alpha("The node's name. The count is always 1."), labelNames: ['node'], registers });
    this.containersPerPodCount = new Histogram({
      name: 'kubelet_containers_per_pod_count',
      help: alpha('The number of containers per pod.'),
      buckets: DEF_BUCKETS,
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: alpha('Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync'),
      labelNames: ['operation_type'],
      buckets: DEF_BUCKETS,
      registers,
    });
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: alpha('Duration in seconds for a single pod to go from pending to running.'),
      buckets: DEF_BUCKETS,
      registers,
    });
    this.podWorkerStartDuration = new Histogram({
      name: 'kubelet_pod_worker_start_duration_seconds',
      help: alpha('Duration in seconds from seeing a pod to starting a worker.'),
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: alpha('Duration in seconds for relisting pods in PLEG.'),
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegDiscardEvents = new Counter({
      name: 'kubelet_pleg_discard_events',
      help: alpha('The number of discard events in PLEG.'),
      registers,
      // Arrow functions: `this` is the KubeletMetrics, whose fields are set by the time a scrape collects.
      collect: () => {
        const dropped = this.plegSource?.droppedEvents?.();
        if (dropped !== undefined && dropped > this.plegDroppedSeen) {
          this.plegDiscardEvents.inc(dropped - this.plegDroppedSeen);
          this.plegDroppedSeen = dropped;
        }
      },
    });
    this.plegRelistInterval = new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: alpha('Interval in seconds between relisting in PLEG.'),
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegLastSeen = new Gauge({
      name: 'kubelet_pleg_last_seen_seconds',
      help: alpha('Timestamp in seconds when PLEG was last seen active.'),
      registers,
      collect: () => {
        const last = this.plegSource?.lastRelistTime();
        if (last !== undefined) this.plegLastSeen.set(Math.floor(last / 1000));
      },
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: alpha('Cumulative number of runtime operations by operation type.'),
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: alpha('Duration in seconds of runtime operations. Broken down by operation type.'),
      labelNames: ['operation_type'],
      buckets: RUNTIME_OPERATION_BUCKETS,
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: alpha('Cumulative number of runtime operation errors by operation type.'),
      labelNames: ['operation_type'],
      registers,
    });
    this.runPodSandboxDuration = new Histogram({
      name: 'kubelet_run_podsandbox_duration_seconds',
      help: alpha('Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.'),
      labelNames: ['runtime_handler'],
      buckets: DEF_BUCKETS,
      registers,
    });
    this.runPodSandboxErrors = new Counter({
      name: 'kubelet_run_podsandbox_errors_total',
      help: alpha('Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.'),
      labelNames: ['runtime_handler'],
      registers,
    });
    this.runningPods = new Gauge({ name: 'kubelet_running_pods', help: alpha('Number of pods currently running'), registers });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: alpha('Number of containers currently running'),
      labelNames: ['container_state'],
      registers,
    });
    this.startedPods = new Counter({ name: 'kubelet_started_pods_total', help: alpha('Cumulative number of pods started'), registers });
    this.startedPodsErrors = new Counter({ name: 'kubelet_started_pods_errors_total', help: alpha('Cumulative number of errors when starting pods'), registers });
    this.startedContainers = new Counter({
      name: 'kubelet_started_containers_total',
      help: alpha('Cumulative number of containers started'),
      labelNames: ['container_type'],
      registers,
    });
    this.startedContainersErrors = new Counter({
      name: 'kubelet_started_containers_errors_total',
      help: alpha('Cumulative number of errors when starting containers'),
      labelNames: ['container_type', 'code'],
      registers,
    });
    const httpLabels = ['method', 'path', 'server_type', 'long_running'] as const;
    this.httpRequests = new Counter({
      name: 'kubelet_http_requests_total',
      help: alpha('Number of the http requests received since the server started'),
      labelNames: httpLabels,
      registers,
    });
    this.httpRequestsDuration = new Histogram({
      name: 'kubelet_http_requests_duration_seconds',
      help: alpha('Duration in seconds to serve http requests'),
      labelNames: httpLabels,
      buckets: DEF_BUCKETS,
      registers,
    });
    this.httpInflightRequests = new Gauge({
      name: 'kubelet_http_inflight_requests',
      help: alpha('Number of the inflight http requests'),
      labelNames: httpLabels,
      registers,
    });
    this.storageOperationDuration = new Histogram({
      name: 'storage_operation_duration_seconds',
      help: alpha('Storage operation duration'),
      labelNames: ['volume_plugin', 'operation_name'],
      buckets: STORAGE_OPERATION_BUCKETS,
      registers,
    });
    this.storageOperationErrors = new Counter({
      name: 'storage_operation_errors_total',
      help: alpha('Storage operation errors'),
      labelNames: ['volume_plugin', 'operation_name'],
      registers,
    });
    this.storageOperationStatus = new Counter({
      name: 'storage_operation_status_count',
      help: alpha('Storage operation return statuses count'),
      labelNames: ['volume_plugin', 'operation_name', 'status'],
      registers,
    });
    this.restClientRequests = new Counter({
      name: 'rest_client_requests_total',
      help: alpha('Number of HTTP requests, partitioned by status code, method, and host.'),
      labelNames: ['code', 'method', 'host'],
      registers,
    });
    this.proberResults = new Counter({
      name: 'prober_probe_total',
      help: alpha('Cumulative number of a liveness, readiness or startup probe for a container by result.'),
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers: [this.probeRegistry],
    });
    // Go: compbasemetrics.RegisterProcessStartTime on the probes registry.
    new Gauge({
      name: 'process_start_time_seconds',
      help: alpha('Start time of the process since unix epoch in seconds.'),
      registers: [this.probeRegistry],
    }).set(processStartTimeSeconds());
    if (options.processMetrics ?? true) registerProcessMetrics(this.registry);
    if (options.eventLoop) registerNodejsMetrics(this.registry, options.eventLoop);
    if (options.nodeName !== undefined) this.setNodeName(options.nodeName);
  }

  /** The monotonic clock durations are measured with, in ms. */
  now(): number {
    return this.clock();
  }

  /** The text /metrics serves. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The text /metrics/probes serves. */
  probeMetrics(): Promise<string> {
    return this.probeRegistry.metrics();
  }

  /** The Content-Type of both texts. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Go: SetNodeName. */
  setNodeName(name: string): void {
    this.nodeName.reset();
    this.nodeName.set({ node: name }, 1);
  }

  // ---- pods and pod workers

  /** A pod worker finished an update that carried a start time (Go: PodWorkerDuration). */
  observePodWorkerDuration(operationType: string, durationMs: number): void {
    this.podWorkerDuration.observe({ operation_type: operationType }, seconds(durationMs));
  }

  /** A pod's first sync began, this long after the kubelet first saw it (Go: PodWorkerStartDuration). */
  observePodWorkerStartDuration(durationMs: number): void {
    this.podWorkerStartDuration.observe(seconds(durationMs));
  }

  /** A pod went from pending to running, this long after the kubelet first saw it (Go: PodStartDuration). */
  observePodStartDuration(durationMs: number): void {
    this.podStartDuration.observe(seconds(durationMs));
  }

  /** A pod was dispatched for creation with this many containers (Go: ContainersPerPodCount). */
  observeContainersPerPod(count: number): void {
    this.containersPerPodCount.observe(count);
  }

  /** The runtime manager created a pod sandbox for a pod (Go: StartedPodsTotal / StartedPodsErrorsTotal). */
  recordStartedPod(failed: boolean): void {
    this.startedPods.inc();
    if (failed) this.startedPodsErrors.inc();
  }

  /**
   * The runtime manager started a container (not counted while in CrashLoopBackOff); errorCode is the start's
   * reason (e.g. 'ErrImagePull', 'CreateContainerError') when it failed. containerType: 'container',
   * 'init_container' or 'ephemeral_container'.
   */
  recordStartedContainer(containerType: string, errorCode?: string): void {
    this.startedContainers.inc({ container_type: containerType });
    if (errorCode !== undefined) this.startedContainersErrors.inc({ code: errorCode, container_type: containerType });
  }

  // ---- PLEG

  /** Go: PLEGRelistDuration. */
  observePlegRelistDuration(durationMs: number): void {
    this.plegRelistDuration.observe(seconds(durationMs));
  }

  /** Time since the previous successful relist, observed as a relist starts (Go: PLEGRelistInterval). */
  observePlegRelistInterval(intervalMs: number): void {
    this.plegRelistInterval.observe(seconds(intervalMs));
  }

  /**
   * kubelet_pleg_last_seen_seconds and kubelet_pleg_discard_events, read at scrape time from the PLEG:
   * when its last relist listed the pods (epoch ms) and how many events its full channel dropped.
   */
  watchPleg(source: { lastRelistTime(): number | undefined; droppedEvents?: () => number }): void {
    this.plegSource = source;
  }

  /**
   * Go's certificate manager metrics, registered for the certificates the kubelet rotates:
   * kubelet_certificate_manager_{client,server}_ttl_seconds (seconds to the current certificate's expiry, +Inf
   * without one), kubelet_certificate_manager_client_expiration_renew_errors and
   * kubelet_certificate_manager_server_rotation_seconds (how long the previous serving certificate lived).
   * Returns the hooks the certificate managers report through.
   */
  watchCertificates(source: { now: () => number; clientNotAfter?: () => number | undefined; serverNotAfter?: () => number | undefined }): {
    clientRenewError: () => void;
    serverRotated: (previousNotBefore: number | undefined) => void;
  } {
    const registers = [this.registry];
    const ttl = (notAfter: number | undefined) => (notAfter === undefined ? Infinity : (notAfter - source.now()) / 1000);
    let renewErrors: Counter | undefined;
    let rotation: Histogram | undefined;
    if (source.clientNotAfter) {
      const clientNotAfter = source.clientNotAfter;
      const gauge: Gauge = new Gauge({
        name: 'kubelet_certificate_manager_client_ttl_seconds',
        help: alpha(
          "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.",
        ),
        registers,
        collect: () => gauge.set(ttl(clientNotAfter())),
      });
      renewErrors = new Counter({ name: 'kubelet_certificate_manager_client_expiration_renew_errors', help: alpha('Counter of certificate renewal errors.'), registers });
    }
    if (source.serverNotAfter) {
      const serverNotAfter = source.serverNotAfter;
      const gauge: Gauge = new Gauge({
        name: 'kubelet_certificate_manager_server_ttl_seconds',
        help: alpha(
          "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF.",
        ),
        registers,
        collect: () => gauge.set(ttl(serverNotAfter())),
      });
      rotation = new Histogram({
        name: 'kubelet_certificate_manager_server_rotation_seconds',
        help: alpha('Histogram of the number of seconds the previous certificate lived before being rotated.'),
        buckets: [3600, 10800, 21600, 43200, 86400, 172800, 345600, 604800, 2592000, 7776000, 15552000, 31104000, 124416000],
        registers,
      });
    }
    return {
      clientRenewError: () => renewErrors?.inc(),
      serverRotated: (previousNotBefore) => {
        if (previousNotBefore !== undefined) rotation?.observe((source.now() - previousNotBefore) / 1000);
      },
    };
  }

  /**
   * Go's volume stats collector (pkg/kubelet/metrics/collectors/volume_stats.go): at each scrape,
   * kubelet_volume_stats_{capacity_bytes,available_bytes,used_bytes,inodes,inodes_free,inodes_used}{namespace,persistentvolumeclaim}
   * for every volume of a pod backed by a claim, from `source` (the pods' volume stats of the Summary API). A
   * claim mounted by several pods is reported once; a figure the volume does not tell is left out. A source that
   * fails leaves the gauges empty for that scrape.
   */
  watchVolumeStats(source: () => Promise<readonly ClaimVolumeStats[]>): void {
    const labelNames = ['namespace', 'persistentvolumeclaim'] as const;
    const figures: Array<[string, string, keyof ClaimVolumeStats]> = [
      ['kubelet_volume_stats_capacity_bytes', 'Capacity in bytes of the volume', 'capacityBytes'],
      ['kubelet_volume_stats_available_bytes', 'Number of available bytes in the volume', 'availableBytes'],
      ['kubelet_volume_stats_used_bytes', 'Number of used bytes in the volume', 'usedBytes'],
      ['kubelet_volume_stats_inodes', 'Maximum number of inodes in the volume', 'inodes'],
      ['kubelet_volume_stats_inodes_free', 'Number of free inodes in the volume', 'inodesFree'],
      ['kubelet_volume_stats_inodes_used', 'Number of used inodes in the volume', 'inodesUsed'],
    ];
    // One read of the source per scrape, shared by the six gauges' collect calls.
    let pending: Promise<readonly ClaimVolumeStats[]> | undefined;
    const read = (): Promise<readonly ClaimVolumeStats[]> => {
      pending ??= source()
        .catch(() => [] as readonly ClaimVolumeStats[])
        .finally(() => setImmediate(() => (pending = undefined)));
      return pending;
    };
    for (const [name, help, field] of figures) {
      const gauge: Gauge<'namespace' | 'persistentvolumeclaim'> = new Gauge({
        name,
        help: alpha(help),
        labelNames,
        registers: [this.registry],
        collect: async () => {
          const volumes = await read();
          gauge.reset();
          const seen = new Set<string>();
          for (const volume of volumes) {
            const key = `${volume.namespace}/${volume.claimName}`;
            if (seen.has(key)) continue;
            seen.add(key);
            const value = volume[field];
            if (typeof value === 'number') gauge.set({ namespace: volume.namespace, persistentvolumeclaim: volume.claimName }, value);
          }
        },
      });
    }
  }

  /**
   * The pods a relist listed (Go: updateRunningPodAndContainerMetrics): kubelet_running_pods counts pods with a
   * running sandbox, kubelet_running_containers the listed containers by state.
   */
  setRunningPods(pods: readonly RuntimePod[]): void {
    const byState = new Map<string, number>(CONTAINER_STATES.map((s) => [s, 0]));
    let running = 0;
    for (const pod of pods) {
      for (const container of pod.containers) byState.set(container.state, (byState.get(container.state) ?? 0) + 1);
      if (pod.sandboxes.some((s) => s.state === 'running')) running++;
    }
    for (const [state, count] of byState) this.runningContainers.set({ container_state: state }, count);
    this.runningPods.set(running);
  }

  // ---- CRI

  recordRuntimeOperation(operation: string, durationMs: number, failed: boolean): void {
    this.runtimeOperations.inc({ operation_type: operation });
    this.runtimeOperationsDuration.observe({ operation_type: operation }, seconds(durationMs));
    if (failed) this.runtimeOperationsErrors.inc({ operation_type: operation });
  }

  recordRunPodSandbox(runtimeHandler: string, durationMs: number, failed: boolean): void {
    this.runPodSandboxDuration.observe({ runtime_handler: runtimeHandler }, seconds(durationMs));
    if (failed) this.runPodSandboxErrors.inc({ runtime_handler: runtimeHandler });
  }

  // ---- servers

  /**
   * Call as a kubelet server starts serving a request, and call the returned function once the response is
   * finished (or the connection closed): counts kubelet_http_requests_total, tracks kubelet_http_inflight_requests
   * and observes kubelet_http_requests_duration_seconds (Go: Server.ServeHTTP). The returned function is idempotent.
   * Fits KubeletServerOptions.onHttpRequest as is: `onHttpRequest: (labels) => metrics.startHttpRequest(labels)`.
   */
  startHttpRequest(request: HttpRequestInfo): () => void {
    // Labels in Go's output order (sorted by name).
    let labels: { long_running: string; method: string; path: string; server_type: string };
    if (request.longRunning !== undefined) {
      labels = { long_running: String(request.longRunning), method: request.method, path: request.path, server_type: request.serverType };
    } else {
      const root = httpMetricPath(request.path);
      labels = {
        long_running: String(LONG_RUNNING_PATHS.has(root)),
        method: HTTP_METHOD_BUCKETS.has(request.method) ? request.method : 'other',
        path: this.httpPathBuckets.has(root) ? root : 'other',
        server_type: request.serverType,
      };
    }
    this.httpRequests.inc(labels);
    this.httpInflightRequests.inc(labels);
    const started = this.clock();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.httpInflightRequests.dec(labels);
      this.httpRequestsDuration.observe(labels, seconds(this.clock() - started));
    };
  }

  /** A request to the API server got a response (its status code) or failed (code '<error>'). */
  recordRestClientRequest(code: number | string, method: string, host: string): void {
    this.restClientRequests.inc({ code: String(code), host, method });
  }

  // ---- volumes

  /**
   * A volume operation finished (Go: OperationCompleteHook): success observes its duration, failure counts an
   * error; both count a status ('success' or 'fail-unknown'). Operation names as Go's: 'volume_mount',
   * 'volume_unmount', 'verify_controller_attached_volume', ...
   */
  observeStorageOperation(volumePlugin: string, operationName: string, durationMs: number, failed = false): void {
    const labels = { operation_name: operationName, volume_plugin: volumePlugin };
    if (failed) this.storageOperationErrors.inc(labels);
    else this.storageOperationDuration.observe(labels, seconds(durationMs));
    this.storageOperationStatus.inc({ operation_name: operationName, status: failed ? 'fail-unknown' : 'success', volume_plugin: volumePlugin });
  }

  // ---- prober

  /** A probe ran and gave this result (Go: ProberResults in worker.doProbe). */
  recordProbeResult(probe: ProbeMetricLabels, result: keyof typeof PROBE_RESULT_LABEL): void {
    this.proberResults.inc({ ...probeLabels(probe), result: PROBE_RESULT_LABEL[result] ?? 'unknown' });
  }

  /** A probe worker stopped: its series go (Go: ProberResults.Delete in the worker's cleanup). */
  forgetProbe(probe: ProbeMetricLabels): void {
    const labels = probeLabels(probe);
    for (const result of Object.values(PROBE_RESULT_LABEL)) this.proberResults.remove({ ...labels, result });
  }

  // ---- lifecycle

  /** Runs fn on close() (e.g. to unsubscribe an instrumentation). */
  onClose(fn: () => void): void {
    this.disposers.push(fn);
  }

  /** Ends what was registered with onClose; the registries stay readable. */
  close(): void {
    for (const fn of this.disposers.splice(0)) fn();
  }
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}

/** The labels but the result, in Go's output order (sorted by name; result comes last). */
function probeLabels(probe: ProbeMetricLabels) {
  return { container: probe.container, namespace: probe.namespace, pod: probe.pod, pod_uid: probe.podUid, probe_type: PROBE_TYPE_LABEL[probe.probeType] };
}

function processStartTimeSeconds(): number {
  return Math.round(performance.timeOrigin / 10) / 100;
}

/** Go's procfs reads "unlimited" as the largest uint64. */
const UNLIMITED = 18446744073709551615;

function readLimit(name: string): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(name));
    const soft = line?.slice(name.length).trim().split(/\s+/)[0];
    if (soft === undefined) return undefined;
    return soft === 'unlimited' ? UNLIMITED : Number(soft);
  } catch {
    return undefined;
  }
}

function readVirtualMemoryBytes(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command's closing paren start at field 3 (state); vsize is field 23.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[20]);
  } catch {
    return undefined;
  }
}

/**
 * The process metrics of Go's process collector (client_golang's NewProcessCollector, registered raw, so with no
 * stability prefix): process_cpu_seconds_total, process_open_fds, process_max_fds, process_virtual_memory_bytes,
 * process_virtual_memory_max_bytes, process_resident_memory_bytes, process_start_time_seconds. Read at scrape time
 * (from /proc on Linux; the /proc ones are left out elsewhere).
 */
export function registerProcessMetrics(registry: Registry): void {
  const registers = [registry];
  let cpuSeen = 0;
  new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers,
    collect() {
      const usage = process.cpuUsage();
      const total = (usage.user + usage.system) / 1e6;
      if (total > cpuSeen) {
        this.inc(total - cpuSeen);
        cpuSeen = total;
      }
    },
  });
  new Gauge({
    name: 'process_open_fds',
    help: 'Number of open file descriptors.',
    registers,
    collect() {
      try {
        this.set(readdirSync('/proc/self/fd').length);
      } catch {
        // not Linux
      }
    },
  });
  new Gauge({
    name: 'process_max_fds',
    help: 'Maximum number of open file descriptors.',
    registers,
    collect() {
      const limit = readLimit('Max open files');
      if (limit !== undefined) this.set(limit);
    },
  });
  new Gauge({
    name: 'process_virtual_memory_bytes',
    help: 'Virtual memory size in bytes.',
    registers,
    collect() {
      const vsize = readVirtualMemoryBytes();
      if (vsize !== undefined && Number.isFinite(vsize)) this.set(vsize);
    },
  });
  new Gauge({
    name: 'process_virtual_memory_max_bytes',
    help: 'Maximum amount of virtual memory available in bytes.',
    registers,
    collect() {
      const limit = readLimit('Max address space');
      if (limit !== undefined) this.set(limit);
    },
  });
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({ name: 'process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.', registers }).set(processStartTimeSeconds());
}

/** What registerNodejsMetrics reads the event loop from: core's EventLoopMonitor. */
export type EventLoopStatsSource = Pick<EventLoopMonitor, 'lagMs' | 'utilization' | 'takeDelayStats'>;

/**
 * prom-client's Node.js runtime metrics, with its names and help texts, read at scrape time:
 * nodejs_eventloop_lag_seconds (the monitor's latest lag), nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds
 * (monitorEventLoopDelay since the previous scrape, reset by each scrape as prom-client does),
 * nodejs_eventloop_utilization_ratio (the loop's utilization since the previous scrape, 0..1; not in prom-client),
 * nodejs_heap_size_total_bytes, nodejs_heap_size_used_bytes, nodejs_external_memory_bytes,
 * nodejs_active_handles_total, nodejs_active_resources{type} and nodejs_active_resources_total (`Timeout` is the
 * count of ref'ed timers). Several registries may read one monitor (a fleet's nodes share the process's loop): the
 * delay figures and the utilization are then since the previous scrape of any of them.
 */
export function registerNodejsMetrics(registry: Registry, eventLoop: EventLoopStatsSource): void {
  const registers = [registry];
  const delayGauge = (name: string, help: string) => new Gauge({ name: `nodejs_eventloop_lag_${name}_seconds`, help, registers });
  new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Lag of event loop in seconds.',
    registers,
    // As prom-client: this one metric's collect sets the delay figures.
    collect() {
      this.set(eventLoop.lagMs() / 1000);
      const stats = eventLoop.takeDelayStats();
      lagMin.set(stats.minMs / 1000);
      lagMax.set(stats.maxMs / 1000);
      lagMean.set(stats.meanMs / 1000);
      lagStddev.set(stats.stddevMs / 1000);
      lagP50.set(stats.p50Ms / 1000);
      lagP90.set(stats.p90Ms / 1000);
      lagP99.set(stats.p99Ms / 1000);
    },
  });
  const lagMin = delayGauge('min', 'The minimum recorded event loop delay.');
  const lagMax = delayGauge('max', 'The maximum recorded event loop delay.');
  const lagMean = delayGauge('mean', 'The mean of the recorded event loop delays.');
  const lagStddev = delayGauge('stddev', 'The standard deviation of the recorded event loop delays.');
  const lagP50 = delayGauge('p50', 'The 50th percentile of the recorded event loop delays.');
  const lagP90 = delayGauge('p90', 'The 90th percentile of the recorded event loop delays.');
  const lagP99 = delayGauge('p99', 'The 99th percentile of the recorded event loop delays.');
  new Gauge({
    name: 'nodejs_eventloop_utilization_ratio',
    help: 'Ratio of time the event loop was active since the previous scrape (performance.eventLoopUtilization()).',
    registers,
    collect() {
      this.set(eventLoop.utilization());
    },
  });
  new Gauge({
    name: 'nodejs_heap_size_total_bytes',
    help: 'Process heap size from Node.js in bytes.',
    registers,
    collect() {
      const usage = process.memoryUsage();
      this.set(usage.heapTotal);
      heapUsed.set(usage.heapUsed);
      external.set(usage.external);
    },
  });
  const heapUsed = new Gauge({ name: 'nodejs_heap_size_used_bytes', help: 'Process heap size used from Node.js in bytes.', registers });
  const external = new Gauge({ name: 'nodejs_external_memory_bytes', help: 'Node.js external memory size in bytes.', registers });
  new Gauge({
    name: 'nodejs_active_handles_total',
    help: 'Total number of active handles.',
    registers,
    collect() {
      const handles = (process as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.();
      if (handles) this.set(handles.length);
    },
  });
  new Gauge({
    name: 'nodejs_active_resources',
    help: 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
    labelNames: ['type'],
    registers,
    collect() {
      const counts = new Map<string, number>();
      for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
      this.reset();
      for (const [type, count] of counts) this.set({ type }, count);
    },
  });
  new Gauge({
    name: 'nodejs_active_resources_total',
    help: 'Total number of active resources.',
    registers,
    collect() {
      this.set(process.getActiveResourcesInfo().length);
    },
  });
}

// ---- the instrumented CRI services (Go: kuberuntime's instrumentedRuntimeService / instrumentedImageManagerService)

/** Go's operation names of the RuntimeService calls. */
export const RUNTIME_SERVICE_OPERATIONS: Readonly<Record<keyof RuntimeService, string>> = {
  version: 'version',
  status: 'status',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  updateContainerResources: 'update_container',
  reopenContainerLog: 'reopen_container_log',
  execSync: 'exec_sync',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
  containerStats: 'container_stats',
  listContainerStats: 'list_container_stats',
  podSandboxStats: 'podsandbox_stats',
  listPodSandboxStats: 'list_podsandbox_stats',
  updateRuntimeConfig: 'update_runtime_config',
  runtimeConfig: 'runtime_config',
  getContainerEvents: 'get_container_events',
};

/** Go's operation names of the ImageService calls. */
export const IMAGE_SERVICE_OPERATIONS: Readonly<Record<keyof ImageService, string>> = {
  listImages: 'list_images',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  removeImage: 'remove_image',
  imageFsInfo: 'image_fs_info',
};

/** Methods that return an async iterable: the operation spans the stream, recorded when it ends. */
const STREAMING_METHODS = new Set<PropertyKey>(['getContainerEvents']);

/**
 * Wraps a RuntimeService so every CRI call counts kubelet_runtime_operations_total, observes
 * kubelet_runtime_operations_duration_seconds and, when it rejects, kubelet_runtime_operations_errors_total,
 * with Go's operation names; runPodSandbox also feeds kubelet_run_podsandbox_* by runtime handler. The wrapper is a
 * Proxy: everything else of the object (close(), endpoint, a fake's own fields) is the object's own. An
 * async-iterable call (getContainerEvents) is recorded once its stream ends: done, failed or closed early.
 */
export function instrumentRuntimeService<T extends RuntimeService>(service: T, metrics: RuntimeOperationsRecorder): T {
  return instrument(service, RUNTIME_SERVICE_OPERATIONS, metrics, (method, args, durationMs, failed) => {
    if (method === 'runPodSandbox') metrics.recordRunPodSandbox(typeof args[1] === 'string' ? args[1] : '', durationMs, failed);
  });
}

/** Wraps an ImageService like instrumentRuntimeService. */
export function instrumentImageService<T extends ImageService>(service: T, metrics: RuntimeOperationsRecorder): T {
  return instrument(service, IMAGE_SERVICE_OPERATIONS, metrics);
}

function instrument<T extends object>(
  service: T,
  operations: Readonly<Record<string, string>>,
  metrics: RuntimeOperationsRecorder,
  extra?: (method: string, args: unknown[], durationMs: number, failed: boolean) => void,
): T {
  const now = metrics.now ? () => metrics.now!() : () => performance.now();
  const wrapped = new Map<PropertyKey, { original: unknown; fn: unknown }>();
  const record = (method: string, args: unknown[], started: number, failed: boolean) => {
    const durationMs = now() - started;
    metrics.recordRuntimeOperation(operations[method], durationMs, failed);
    extra?.(method, args, durationMs, failed);
  };
  const wrap = (method: string, original: (...args: unknown[]) => unknown) => {
    if (STREAMING_METHODS.has(method)) {
      return (...args: unknown[]) => instrumentStream(original.apply(service, args) as AsyncIterable<unknown>, now, (started, failed) => record(method, args, started, failed));
    }
    return (...args: unknown[]) => {
      const started = now();
      let result: unknown;
      try {
        result = original.apply(service, args);
      } catch (error) {
        record(method, args, started, true);
        throw error;
      }
      if (!isPromiseLike(result)) {
        record(method, args, started, false);
        return result;
      }
      return Promise.resolve(result).then(
        (value) => {
          record(method, args, started, false);
          return value;
        },
        (error: unknown) => {
          record(method, args, started, true);
          throw error;
        },
      );
    };
  };
  return new Proxy(service, {
    get(target, prop) {
      // The target as receiver: getters and methods see the real object (private fields work).
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const cached = wrapped.get(prop);
      if (cached && cached.original === value) return cached.fn;
      const fn = typeof prop === 'string' && Object.hasOwn(operations, prop) ? wrap(prop, value as (...args: unknown[]) => unknown) : value.bind(target);
      wrapped.set(prop, { original: value, fn });
      return fn;
    },
  });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}

/** An async iterable that reports once, when its iteration ends: completed, failed, or returned early. */
function instrumentStream<V>(source: AsyncIterable<V>, now: () => number, done: (started: number, failed: boolean) => void): AsyncIterable<V> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<V> {
      const started = now();
      let finished = false;
      const finish = (failed: boolean) => {
        if (finished) return;
        finished = true;
        done(started, failed);
      };
      let iterator: AsyncIterator<V>;
      try {
        iterator = source[Symbol.asyncIterator]();
      } catch (error) {
        finish(true);
        throw error;
      }
      return {
        async next(...args: [] | [unknown]) {
          try {
            const result = await iterator.next(...args);
            if (result.done) finish(false);
            return result;
          } catch (error) {
            finish(true);
            throw error;
          }
        },
        async return(value?: unknown) {
          try {
            return iterator.return ? await iterator.return(value) : { done: true as const, value: value as V };
          } finally {
            finish(false);
          }
        },
        async throw(error?: unknown) {
          finish(true);
          if (iterator.throw) return iterator.throw(error);
          throw error;
        },
      };
    },
  };
}
