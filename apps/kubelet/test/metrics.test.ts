// The composed kubelet's metrics: the default KubeletDeps (runtime manager, generic PLEG, pod workers, prober,
// volume manager) over the CRI fakes, so every instrumentation the container wires is exercised.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { PodConfig } from '@kubelet-ts/pod-config';
import { FakePodSource, makeTestPod } from '@kubelet-ts/pod-config/testing';
import { FakeMounter } from '@kubelet-ts/volume-manager/testing';
import type { KubeletMetrics } from '@kubelet-ts/server';
import { Tokens, registerKubeletDeps } from '../src/container.js';
import { parseFlags } from '../src/flags.js';
import { resolveConfig } from '../src/config.js';
import type { Kubelet } from '../src/kubelet.js';
import { containerMetricType, instrumentRestClient, podFirstSeenTime, recordStartedPodsAndContainers } from '../src/metrics.js';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function testNode(): V1Node {
  const resources = { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  return { metadata: { name: 'node1' }, spec: {}, status: { capacity: resources, allocatable: resources } };
}

t.test('after a pod starts, /metrics has it running, its start duration and the CRI calls that started it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const config = resolveConfig(
    parseFlags([`--root-dir=${join(dir, 'root')}`, `--pod-logs-dir=${join(dir, 'logs')}`, '--resolv-conf=', '--hostname-override=node1', '--container-runtime-endpoint=unix:///nonexistent.sock', '--cgroups-per-qos=false']),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  const podConfig = new PodConfig({ clock, logger });
  const source = new FakePodSource(podConfig, 'file');
  c.register(Tokens.Clock, { useValue: clock });
  c.register(Tokens.Logger, { useValue: logger });
  // Only the CRI clients are fakes: the instrumentation, runtime manager, PLEG and pod workers are the defaults.
  c.register(Tokens.CriRuntimeService, { useValue: new FakeRuntimeService(clock) });
  c.register(Tokens.CriImageService, { useValue: new FakeImageService(clock) });
  c.register(Tokens.PodSourceConfig, { useValue: { podConfig, stop: async () => podConfig.close() } });
  c.register(Tokens.NodeAnyWay, { useValue: async () => testNode() });
  c.register(Tokens.Mounter, { useValue: new FakeMounter() });
  const kubelet = c.resolve<Kubelet>(Tokens.Kubelet);
  const metrics = c.resolve<KubeletMetrics>(Tokens.Metrics);
  const controller = new AbortController();
  const running = kubelet.run(controller.signal);
  t.teardown(async () => {
    controller.abort();
    await running;
    podConfig.close();
    metrics.close();
  });
  const advanceUntil = async (cond: () => boolean | Promise<boolean>, maxMs = 20_000) => {
    for (let elapsed = 0; elapsed < maxMs && !(await cond()); elapsed += 100) {
      await clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };

  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  pod.spec!.containers[0].readinessProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
  pod.spec!.containers[0].volumeMounts = [{ name: 'scratch', mountPath: '/scratch' }];
  pod.spec!.volumes = [{ name: 'scratch', emptyDir: {} }];
  await source.add(pod);
  await advanceUntil(() => kubelet.getPodStatus(pod.metadata!.uid!)?.containerStatuses?.[0]?.ready === true);
  t.equal(kubelet.getPodStatus(pod.metadata!.uid!)?.phase, 'Running', 'the pod runs');
  await advanceUntil(async () => sample(await metrics.metrics(), 'kubelet_running_pods') === 1, 3_000);

  const text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_node_name{node="node1"}'), 1);
  t.equal(sample(text, 'kubelet_running_pods'), 1, 'the relist saw the running sandbox');
  t.equal(sample(text, 'kubelet_running_containers{container_state="running"}'), 1);
  t.equal(sample(text, 'kubelet_pod_start_duration_seconds_count'), 2, "Go 1.20's rule: at the first sync (no status yet) and as the pod goes Pending -> Running");
  t.ok(sample(text, 'kubelet_pod_start_duration_seconds_sum')! > 0, 'measured from when the kubelet first saw the pod');
  t.equal(sample(text, 'kubelet_pod_worker_start_duration_seconds_count'), 1, 'one first sync');
  t.equal(sample(text, 'kubelet_containers_per_pod_count_count'), 1);
  t.ok(sample(text, 'kubelet_pod_worker_duration_seconds_count{operation_type="create"}')! >= 1, 'the create sync was timed');
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="run_podsandbox"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="create_container"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="start_container"}'), 1);
  t.ok(sample(text, 'kubelet_runtime_operations_total{operation_type="pull_image"}')! + (sample(text, 'kubelet_runtime_operations_total{operation_type="image_status"}') ?? 0) >= 1, 'image calls counted');
  t.ok(sample(text, 'kubelet_runtime_operations_total{operation_type="status"}')! >= 1, "the kubelet's runtime status checks");
  t.ok(sample(text, 'kubelet_runtime_operations_total{operation_type="exec_sync"}')! >= 1, 'the exec readiness probe');
  t.equal(sample(text, 'kubelet_run_podsandbox_duration_seconds_count{runtime_handler=""}'), 1);
  t.equal(sample(text, 'kubelet_started_pods_total'), 1);
  t.equal(sample(text, 'kubelet_started_pods_errors_total'), 0);
  t.equal(sample(text, 'kubelet_started_containers_total{container_type="container"}'), 1);
  t.ok(sample(text, 'kubelet_pleg_relist_duration_seconds_count')! >= 1);
  t.ok(sample(text, 'kubelet_pleg_relist_interval_seconds_count')! >= 1);
  t.ok(Math.abs(sample(text, 'kubelet_pleg_last_seen_seconds')! - clock.now() / 1000) < 5, 'the last relist, in epoch seconds');
  t.equal(sample(text, 'storage_operation_status_count{operation_name="volume_mount",status="success",volume_plugin="kubernetes.io/empty-dir"}'), 1);
  t.equal(sample(text, 'storage_operation_duration_seconds_count{operation_name="volume_mount",volume_plugin="kubernetes.io/empty-dir"}'), 1);
  t.ok(sample(text, 'process_resident_memory_bytes')! > 0);

  const probes = await metrics.probeMetrics();
  t.ok(
    sample(probes, 'prober_probe_total{container="app",namespace="default",pod="web",pod_uid="uid-default-web",probe_type="Readiness",result="successful"}')! >= 1,
    'probe results in the probes registry',
  );
});

t.test('started pods and containers from a sync result: types, error codes, crash-loop backoff not counted', async (t) => {
  const calls: string[] = [];
  const recorder = {
    recordStartedPod: (failed: boolean) => void calls.push(`pod failed=${failed}`),
    recordStartedContainer: (type: string, code?: string) => void calls.push(`${type} ${code ?? 'ok'}`),
  };
  const pod = makeTestPod({ name: 'web', containers: ['app'], initContainers: ['init'] });
  pod.spec!.ephemeralContainers = [{ name: 'debug', image: 'busybox' }];
  recordStartedPodsAndContainers(recorder, pod, {
    syncResults: [
      { action: 'CreatePodSandbox', target: 'web_default' },
      { action: 'ConfigPodSandbox', target: 's1' },
      { action: 'StartContainer', target: 'debug' },
      { action: 'StartContainer', target: 'init', error: 'ErrImagePull', message: 'no registry' },
      { action: 'StartContainer', target: 'app', error: 'CrashLoopBackOff', message: 'back-off' },
      { action: 'KillContainer', target: 'old' },
    ],
  });
  recordStartedPodsAndContainers(recorder, pod, { syncResults: [{ action: 'CreatePodSandbox', target: 'web_default', error: 'CreatePodSandboxError' }] });
  t.same(calls, ['pod failed=false', 'ephemeral_container ok', 'init_container ErrImagePull', 'pod failed=true']);
  t.equal(containerMetricType(pod, 'app'), 'container');
  pod.metadata!.annotations = { 'kubernetes.io/config.seen': '2024-01-01T00:00:00.123456789Z' };
  t.equal(podFirstSeenTime(pod), Date.UTC(2024, 0, 1, 0, 0, 0, 123));
});

t.test('rest_client_requests_total counts the API server requests of the process by code, method and host', async (t) => {
  const server = createServer((request, response) => {
    response.statusCode = request.method === 'PATCH' ? 409 : 200;
    response.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  const recorded: string[] = [];
  const stop = instrumentRestClient({ recordRestClientRequest: (code, method, host) => void recorded.push(`${code} ${method} ${host}`) }, [`127.0.0.1:${port}`]);
  await fetchViaHttp(`http://127.0.0.1:${port}/api/v1/pods`, 'GET');
  await fetchViaHttp(`http://127.0.0.1:${port}/api/v1/namespaces/default/pods/x/status`, 'PATCH');
  await fetchViaHttp(`http://localhost:${port}/other-host`, 'GET');
  await fetchViaHttp('http://127.0.0.1:1/refused', 'GET').catch(() => undefined);
  stop();
  await fetchViaHttp(`http://127.0.0.1:${port}/after-stop`, 'GET');
  t.same(recorded, [`200 GET 127.0.0.1:${port}`, `409 PATCH 127.0.0.1:${port}`]);

  const refused = instrumentRestClient({ recordRestClientRequest: (code, method, host) => void recorded.push(`${code} ${method} ${host}`) }, ['127.0.0.1:1']);
  await fetchViaHttp('http://127.0.0.1:1/refused', 'GET').catch(() => undefined);
  refused();
  t.equal(recorded.at(-1), '<error> GET 127.0.0.1:1', 'a failed request counts as <error>');
});

/** A request over node:http, as @kubernetes/client-node's node-fetch makes them. */
async function fetchViaHttp(url: string, method: string): Promise<void> {
  const { request } = await import('node:http');
  await new Promise<void>((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end();
  });
}
