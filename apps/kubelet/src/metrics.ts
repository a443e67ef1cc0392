// The app's side of the kubelet's metrics: the KubeletMetrics of the node, the rest client instrumentation, and
// the mapping of the components' observer hooks onto it (Go: pkg/kubelet/metrics as NewMainKubelet wires it).
import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { ConfigFirstSeenAnnotationKey, type EventLoopMonitor, type PodSyncResult, type RuntimePod } from '@kubelet-ts/core';
import type { ProbeResult, ProbeWorkerInfo } from '@kubelet-ts/prober';
import { KubeletMetrics } from '@kubelet-ts/server';

/**
 * The node's metrics: kubelet_node_name set, and, with an API server, rest_client_requests_total counted for
 * the requests to it (see instrumentRestClient; undone by metrics.close()); with the process's event loop
 * monitor, the nodejs_* runtime metrics (event-loop lag and utilization, heap, timers).
 */
export function createKubeletMetrics(nodeName: string, kubeConfig?: KubeConfig, eventLoop?: EventLoopMonitor): KubeletMetrics {
  const metrics = new KubeletMetrics({ nodeName, eventLoop });
  if (kubeConfig) metrics.onClose(instrumentRestClient(metrics, apiServerHosts(kubeConfig)));
  return metrics;
}

/** The `host[:port]` of the kubeconfig's current cluster, as client-go labels its requests. */
export function apiServerHosts(kubeConfig: KubeConfig): string[] {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) return [];
  try {
    return [new URL(server).host];
  } catch {
    return [];
  }
}

const RESPONSE_CHANNEL = 'http.client.response.finish';
const ERROR_CHANNEL = 'http.client.request.error';

/**
 * Counts rest_client_requests_total{code,method,host} for every HTTP request of this process to one of `hosts`
 * (the API server's `host[:port]`), as client-go's request metrics do: by response status code, or `<error>`
 * when the request failed without one. It listens on Node's http client diagnostics channels, so the API
 * clients of every library (@kubernetes/client-node over node-fetch) are counted without wrapping them.
 * Returns the function that stops counting.
 */
export function instrumentRestClient(metrics: Pick<KubeletMetrics, 'recordRestClientRequest'>, hosts: Iterable<string>): () => void {
  const wanted = new Set(hosts);
  if (wanted.size === 0) return () => undefined;
  const counted = new WeakSet<ClientRequest>();
  const target = (request: ClientRequest): string | undefined => {
    if (counted.has(request)) return undefined;
    const header = request.getHeader('host');
    const host = typeof header === 'string' ? header : request.host;
    if (!wanted.has(host)) return undefined;
    counted.add(request);
    return host;
  };
  const onResponse = (message: unknown) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const host = target(request);
    if (host !== undefined) metrics.recordRestClientRequest(response.statusCode ?? 0, request.method, host);
  };
  const onError = (message: unknown) => {
    const { request } = message as { request: ClientRequest };
    const host = target(request);
    if (host !== undefined) metrics.recordRestClientRequest('<error>', request.method, host);
  };
  dc.subscribe(RESPONSE_CHANNEL, onResponse);
  dc.subscribe(ERROR_CHANNEL, onError);
  return () => {
    dc.unsubscribe(RESPONSE_CHANNEL, onResponse);
    dc.unsubscribe(ERROR_CHANNEL, onError);
  };
}

/** When the kubelet first saw the pod (the kubernetes.io/config.seen annotation pod-config sets), epoch ms. */
export function podFirstSeenTime(pod: V1Pod): number | undefined {
  const value = pod.metadata?.annotations?.[ConfigFirstSeenAnnotationKey];
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Go's container_type label: 'init_container', 'ephemeral_container' or 'container'. */
export function containerMetricType(pod: V1Pod, containerName: string): string {
  if (pod.spec?.initContainers?.some((c) => c.name === containerName)) return 'init_container';
  if (pod.spec?.ephemeralContainers?.some((c) => c.name === containerName)) return 'ephemeral_container';
  return 'container';
}

/**
 * Counts the sandboxes and containers a runtime sync started (Go: StartedPodsTotal and StartedContainersTotal,
 * counted in kuberuntime's SyncPod): every CreatePodSandbox step, and every StartContainer step but those the
 * crash-loop backoff held back (Go counts after the backoff check); a failed step also counts an error, a
 * container's with its reason as the code.
 */
export function recordStartedPodsAndContainers(metrics: Pick<KubeletMetrics, 'recordStartedPod' | 'recordStartedContainer'>, pod: V1Pod, result: PodSyncResult): void {
  for (const step of result.syncResults) {
    if (step.action === 'CreatePodSandbox') metrics.recordStartedPod(step.error !== undefined);
    else if (step.action === 'StartContainer' && step.error !== 'CrashLoopBackOff') metrics.recordStartedContainer(containerMetricType(pod, step.target), step.error);
  }
}

/** GenericPLEG options reporting to the metrics (relist duration and interval, running pods and containers). */
export function plegMetricsHooks(metrics: KubeletMetrics) {
  return {
    onRelistDuration: (durationMs: number) => metrics.observePlegRelistDuration(durationMs),
    onRelistInterval: (intervalMs: number) => metrics.observePlegRelistInterval(intervalMs),
    onPodsListed: (pods: readonly RuntimePod[]) => metrics.setRunningPods(pods),
  };
}

/** ProbeManager options counting prober_probe_total and dropping a stopped worker's series. */
export function probeMetricsHooks(metrics: KubeletMetrics) {
  const labels = (probe: ProbeWorkerInfo) => ({ probeType: probe.probeType, container: probe.containerName, pod: probe.podName, namespace: probe.podNamespace, podUid: probe.podUID });
  return {
    onProbeResult: (probe: ProbeWorkerInfo, result: ProbeResult) => metrics.recordProbeResult(labels(probe), result),
    onProbeWorkerStopped: (probe: ProbeWorkerInfo) => metrics.forgetProbe(labels(probe)),
  };
}

/** The volume manager's onOperationComplete feeding storage_operation_*. */
export function volumeMetricsHook(metrics: KubeletMetrics) {
  return (op: { pluginName: string; operationName: string; durationMs: number; error?: unknown }) =>
    metrics.observeStorageOperation(op.pluginName, op.operationName, op.durationMs, op.error !== undefined);
}
