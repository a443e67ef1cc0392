import t from 'tap';
import { FakeClock } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import type { RuntimePod } from '@kubelet-ts/core';
import { KubeletMetrics, httpMetricPath, instrumentImageService, instrumentRuntimeService } from '../src/metrics.js';

/** The value of one sample line of the text, e.g. sample(text, 'kubelet_running_pods'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('the registry has the Go kubelet names, help texts, labels and buckets', async (t) => {
  const metrics = new KubeletMetrics({ nodeName: 'node1' });
  const text = await metrics.metrics();
  t.match(text, '# HELP kubelet_node_name [ALPHA] The node\'s name. The count is always 1.\n# TYPE kubelet_node_name gauge\nkubelet_node_name{node="node1"} 1');
  for (const [name, type] of [
    ['kubelet_pod_worker_duration_seconds', 'histogram'],
    ['kubelet_pod_start_duration_seconds', 'histogram'],
    ['kubelet_pod_worker_start_duration_seconds', 'histogram'],
    ['kubelet_pleg_relist_duration_seconds', 'histogram'],
    ['kubelet_pleg_relist_interval_seconds', 'histogram'],
    ['kubelet_pleg_last_seen_seconds', 'gauge'],
    ['kubelet_pleg_discard_events', 'counter'],
    ['kubelet_running_pods', 'gauge'],
    ['kubelet_running_containers', 'gauge'],
    ['kubelet_runtime_operations_total', 'counter'],
    ['kubelet_runtime_operations_errors_total', 'counter'],
    ['kubelet_runtime_operations_duration_seconds', 'histogram'],
    ['kubelet_started_pods_total', 'counter'],
    ['kubelet_started_containers_errors_total', 'counter'],
    ['kubelet_http_requests_total', 'counter'],
    ['kubelet_http_inflight_requests', 'gauge'],
    ['storage_operation_duration_seconds', 'histogram'],
    ['storage_operation_errors_total', 'counter'],
    ['rest_client_requests_total', 'counter'],
    ['process_cpu_seconds_total', 'counter'],
    ['process_resident_memory_bytes', 'gauge'],
    ['process_start_time_seconds', 'gauge'],
  ]) {
    t.match(text, `# TYPE ${name} ${type}\n`, name);
  }
  t.notMatch(text, 'nodejs_', 'no Node.js-specific default metrics');
  t.notMatch(text, 'prober_probe_total', 'probe results are served by the probes registry only');
  t.ok(sample(text, 'process_resident_memory_bytes')! > 0, 'rss is read at scrape time');
  t.ok(sample(text, 'process_open_fds')! > 0, 'open fds from /proc');
  t.ok(Math.abs(sample(text, 'process_start_time_seconds')! - Date.now() / 1000) < 3600, 'start time in epoch seconds');

  metrics.observePodWorkerDuration('create', 300);
  metrics.recordRuntimeOperation('list_podsandbox', 20, false);
  const after = await metrics.metrics();
  t.equal(sample(after, 'kubelet_pod_worker_duration_seconds_bucket{le="0.5",operation_type="create"}'), 1);
  t.equal(sample(after, 'kubelet_pod_worker_duration_seconds_bucket{le="0.25",operation_type="create"}'), 0, "Go's DefBuckets");
  t.equal(sample(after, 'kubelet_pod_worker_duration_seconds_sum{operation_type="create"}'), 0.3, 'durations in seconds');
  t.equal(sample(after, 'kubelet_runtime_operations_duration_seconds_bucket{le="0.03125",operation_type="list_podsandbox"}'), 1, 'ExponentialBuckets(.005, 2.5, 14)');
  t.equal(sample(after, 'kubelet_runtime_operations_duration_seconds_bucket{le="0.0125",operation_type="list_podsandbox"}'), 0);
  t.match(after, 'le="745.0580596923828"', 'the 14th runtime operation bucket');
});

t.test('running pods and containers from a relist', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  const pod = (id: string, sandbox: RuntimePod['sandboxes'][number]['state'], containers: RuntimePod['containers'][number]['state'][]): RuntimePod => ({
    id,
    name: id,
    namespace: 'default',
    createdAt: 0,
    sandboxes: [{ id: { type: 'fake', id: `s-${id}` }, state: sandbox, createdAt: 0 }],
    containers: containers.map((state, i) => ({ id: { type: 'fake', id: `${id}-${i}` }, name: `c${i}`, image: 'i', imageId: 'i', hash: 'h', state, createdAt: 0 })),
  });
  metrics.setRunningPods([pod('a', 'running', ['running', 'exited']), pod('b', 'exited', ['exited']), pod('c', 'running', ['created'])]);
  let text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_running_pods'), 2, 'pods with a running sandbox');
  t.equal(sample(text, 'kubelet_running_containers{container_state="running"}'), 1);
  t.equal(sample(text, 'kubelet_running_containers{container_state="exited"}'), 2);
  t.equal(sample(text, 'kubelet_running_containers{container_state="created"}'), 1);
  metrics.setRunningPods([]);
  text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_running_pods'), 0);
  t.equal(sample(text, 'kubelet_running_containers{container_state="exited"}'), 0, 'a state no container is in anymore drops to 0');
});

t.test('PLEG last seen and discarded events are read at scrape time', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  let last: number | undefined = undefined;
  let dropped = 0;
  metrics.watchPleg({ lastRelistTime: () => last, droppedEvents: () => dropped });
  let text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_pleg_discard_events'), 0);
  last = 1_700_000_000_500;
  dropped = 3;
  text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_pleg_last_seen_seconds'), 1_700_000_000);
  t.equal(sample(text, 'kubelet_pleg_discard_events'), 3);
  dropped = 5;
  t.equal(sample(await metrics.metrics(), 'kubelet_pleg_discard_events'), 5, 'the counter follows the PLEG');
  metrics.observePlegRelistDuration(12);
  metrics.observePlegRelistInterval(1000);
  text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_pleg_relist_duration_seconds_count'), 1);
  t.equal(sample(text, 'kubelet_pleg_relist_interval_seconds_bucket{le="1"}'), 1);
});

t.test('the instrumented RuntimeService counts operations with Go names, errors, and keeps the interface', async (t) => {
  const clock = new FakeClock();
  const metrics = new KubeletMetrics({ processMetrics: false, now: () => clock.now() });
  const fake = new FakeRuntimeService(clock);
  const service = instrumentRuntimeService(fake, metrics);
  await service.version('v1');
  const sandboxId = await service.runPodSandbox({ metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 } }, 'runc');
  await service.listPodSandbox();
  await service.listPodSandbox();
  fake.injectError('stopPodSandbox', 'Unavailable');
  await t.rejects(service.stopPodSandbox(sandboxId), 'the rejection reaches the caller');
  fake.injectError('runPodSandbox', 'Unknown');
  await t.rejects(service.runPodSandbox({ metadata: { name: 'q', namespace: 'default', uid: 'u2', attempt: 0 } }, 'runc'));
  t.equal(service.sandboxes, fake.sandboxes, "the fake's own fields are the object's");
  t.same(service.called, fake.called, 'getters see the real object');

  const text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="version"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="list_podsandbox"}'), 2);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="run_podsandbox"}'), 2);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="stop_podsandbox"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="stop_podsandbox"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="list_podsandbox"}'), undefined, 'no error, no series');
  t.equal(sample(text, 'kubelet_runtime_operations_duration_seconds_count{operation_type="list_podsandbox"}'), 2);
  t.equal(sample(text, 'kubelet_run_podsandbox_duration_seconds_count{runtime_handler="runc"}'), 2);
  t.equal(sample(text, 'kubelet_run_podsandbox_errors_total{runtime_handler="runc"}'), 1);
});

t.test('an instrumented async iterable still streams, and is recorded when it ends', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  const fake = new FakeRuntimeService();
  const service = instrumentRuntimeService(fake, metrics);
  const controller = new AbortController();
  const events: string[] = [];
  const reading = (async () => {
    for await (const event of service.getContainerEvents({ signal: controller.signal })) {
      events.push(event.containerEventType);
      if (events.length === 2) break;
    }
  })();
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(sample(await metrics.metrics(), 'kubelet_runtime_operations_total{operation_type="get_container_events"}'), undefined, 'not recorded while the stream is open');
  const sandboxId = await service.runPodSandbox({ metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 } });
  const id = await service.createContainer(sandboxId, { metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' } }, { metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 } });
  await service.startContainer(id);
  await reading;
  t.same(events, ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT']);
  let text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="get_container_events"}'), 1, 'recorded once the loop broke out');
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="get_container_events"}'), undefined);

  // A stream that fails counts an error.
  const failing = instrumentRuntimeService(
    Object.assign(new FakeRuntimeService(), {
      getContainerEvents: () => ({
        async *[Symbol.asyncIterator]() {
          throw new Error('Unimplemented');
        },
      }),
    }),
    metrics,
  );
  await t.rejects(async () => {
    for await (const _ of failing.getContainerEvents()) void _;
  }, /Unimplemented/);
  text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="get_container_events"}'), 1);
  controller.abort();
});

t.test('the instrumented ImageService, and close() passes through', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  let closed = 0;
  const fake = Object.assign(new FakeImageService(), { close: () => void closed++ });
  fake.unpullable.add('missing:latest');
  const images = instrumentImageService(fake, metrics);
  await images.pullImage({ image: 'busybox:latest' });
  await t.rejects(images.pullImage({ image: 'missing:latest' }));
  await images.imageStatus({ image: 'busybox:latest' });
  await images.imageFsInfo();
  images.close();
  t.equal(closed, 1, 'methods outside the CRI interface are the object\'s own');
  const text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="pull_image"}'), 2);
  t.equal(sample(text, 'kubelet_runtime_operations_errors_total{operation_type="pull_image"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="image_status"}'), 1);
  t.equal(sample(text, 'kubelet_runtime_operations_total{operation_type="image_fs_info"}'), 1);
});

t.test('HTTP requests: counted, in flight, timed, with bounded paths', async (t) => {
  let now = 0;
  const metrics = new KubeletMetrics({ processMetrics: false, now: () => now });
  t.equal(httpMetricPath('/metrics/probes'), 'metrics/probes');
  t.equal(httpMetricPath('/metrics'), 'metrics');
  t.equal(httpMetricPath('/containerLogs/ns/pod/c?follow=true'), 'containerLogs');
  t.equal(httpMetricPath('/exec/ns/pod/c'), 'exec');
  const done = metrics.startHttpRequest({ method: 'GET', path: '/pods', serverType: 'readwrite' });
  const exec = metrics.startHttpRequest({ method: 'POST', path: '/exec/ns/pod/c?command=ls', serverType: 'readwrite' });
  metrics.startHttpRequest({ method: 'BREW', path: '/random/../thing', serverType: 'readonly' })();
  let text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_http_inflight_requests{long_running="false",method="GET",path="pods",server_type="readwrite"}'), 1);
  t.equal(sample(text, 'kubelet_http_requests_total{long_running="true",method="POST",path="exec",server_type="readwrite"}'), 1, 'exec is long running');
  t.equal(sample(text, 'kubelet_http_requests_total{long_running="false",method="other",path="other",server_type="readonly"}'), 1, 'unknown methods and paths are bucketed');
  const prebucketed = metrics.startHttpRequest({ method: 'GET', path: 'metrics/probes', serverType: 'readonly', longRunning: false });
  now = 250;
  prebucketed();
  done();
  done();
  exec();
  text = await metrics.metrics();
  t.equal(sample(text, 'kubelet_http_inflight_requests{long_running="false",method="GET",path="pods",server_type="readwrite"}'), 0);
  t.equal(sample(text, 'kubelet_http_requests_duration_seconds_sum{long_running="false",method="GET",path="pods",server_type="readwrite"}'), 0.25);
  t.equal(sample(text, 'kubelet_http_requests_duration_seconds_count{long_running="false",method="GET",path="pods",server_type="readwrite"}'), 1, 'done() is idempotent');
  t.equal(sample(text, 'kubelet_http_requests_total{long_running="false",method="GET",path="metrics/probes",server_type="readonly"}'), 1, "the server's own labels, taken as given");
});

t.test('storage operations, started pods and containers, rest client requests', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  metrics.observeStorageOperation('kubernetes.io/empty-dir', 'volume_mount', 150);
  metrics.observeStorageOperation('kubernetes.io/secret', 'volume_mount', 10, true);
  metrics.recordStartedPod(false);
  metrics.recordStartedPod(true);
  metrics.recordStartedContainer('container');
  metrics.recordStartedContainer('init_container', 'ErrImagePull');
  metrics.recordRestClientRequest(200, 'GET', '10.0.0.1:6443');
  metrics.recordRestClientRequest('<error>', 'PATCH', '10.0.0.1:6443');
  const text = await metrics.metrics();
  t.equal(sample(text, 'storage_operation_duration_seconds_bucket{le="0.25",operation_name="volume_mount",volume_plugin="kubernetes.io/empty-dir"}'), 1);
  t.equal(sample(text, 'storage_operation_duration_seconds_count{operation_name="volume_mount",volume_plugin="kubernetes.io/secret"}'), undefined, 'failures are not timed (Go 1.20)');
  t.equal(sample(text, 'storage_operation_errors_total{operation_name="volume_mount",volume_plugin="kubernetes.io/secret"}'), 1);
  t.equal(sample(text, 'storage_operation_status_count{operation_name="volume_mount",status="fail-unknown",volume_plugin="kubernetes.io/secret"}'), 1);
  t.equal(sample(text, 'storage_operation_status_count{operation_name="volume_mount",status="success",volume_plugin="kubernetes.io/empty-dir"}'), 1);
  t.equal(sample(text, 'kubelet_started_pods_total'), 2);
  t.equal(sample(text, 'kubelet_started_pods_errors_total'), 1);
  t.equal(sample(text, 'kubelet_started_containers_total{container_type="init_container"}'), 1);
  t.equal(sample(text, 'kubelet_started_containers_errors_total{code="ErrImagePull",container_type="init_container"}'), 1);
  t.equal(sample(text, 'rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"}'), 1);
  t.equal(sample(text, 'rest_client_requests_total{code="<error>",host="10.0.0.1:6443",method="PATCH"}'), 1);
});

t.test('probe results go to the probes registry with Go labels, and go when the worker stops', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  const probe = { probeType: 'readiness' as const, container: 'app', pod: 'web', namespace: 'default', podUid: 'u1' };
  metrics.recordProbeResult(probe, 'success');
  metrics.recordProbeResult(probe, 'success');
  metrics.recordProbeResult(probe, 'failure');
  metrics.recordProbeResult({ ...probe, probeType: 'liveness' }, 'unknown');
  let text = await metrics.probeMetrics();
  t.match(text, '# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.');
  t.equal(sample(text, 'prober_probe_total{container="app",namespace="default",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"}'), 2);
  t.equal(sample(text, 'prober_probe_total{container="app",namespace="default",pod="web",pod_uid="u1",probe_type="Readiness",result="failed"}'), 1);
  t.equal(sample(text, 'prober_probe_total{container="app",namespace="default",pod="web",pod_uid="u1",probe_type="Liveness",result="unknown"}'), 1);
  t.match(text, '# TYPE process_start_time_seconds gauge', 'the probes registry has the process start time, as Go');
  metrics.forgetProbe(probe);
  text = await metrics.probeMetrics();
  t.notMatch(text, 'probe_type="Readiness"', "a stopped worker's series are gone");
  t.match(text, 'probe_type="Liveness"');
  t.equal(metrics.contentType, 'text/plain; version=0.0.4; charset=utf-8');
});

t.test('close() runs what was registered with onClose once', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  let closed = 0;
  metrics.onClose(() => closed++);
  metrics.close();
  metrics.close();
  t.equal(closed, 1);
});

t.test('certificate manager metrics: TTLs read at scrape time, renew errors and rotation ages', async (t) => {
  const clock = new FakeClock();
  const metrics = new KubeletMetrics({ nodeName: 'n' });
  let clientNotAfter: number | undefined = clock.now() + 90_000;
  const hooks = metrics.watchCertificates({ now: () => clock.now(), clientNotAfter: () => clientNotAfter, serverNotAfter: () => undefined });
  let text = await metrics.registry.metrics();
  t.match(text, /^kubelet_certificate_manager_client_ttl_seconds 90$/m);
  t.match(text, /^kubelet_certificate_manager_server_ttl_seconds \+Inf$/m, '+Inf without a certificate, as Go');
  t.match(text, /^kubelet_certificate_manager_client_expiration_renew_errors 0$/m);
  hooks.clientRenewError();
  hooks.serverRotated(clock.now() - 7_200_000);
  clientNotAfter = clock.now() - 1_000;
  text = await metrics.registry.metrics();
  t.match(text, /^kubelet_certificate_manager_client_ttl_seconds -1$/m, 'negative once expired');
  t.match(text, /^kubelet_certificate_manager_client_expiration_renew_errors 1$/m);
  t.match(text, /^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="10800"\} 1$/m);
  const other = new KubeletMetrics({ nodeName: 'n' });
  other.watchCertificates({ now: () => clock.now() });
  t.notMatch(await other.registry.metrics(), /kubelet_certificate_manager/, 'nothing registered for certificates not rotated');
});

t.test('kubelet_volume_stats_* from the claim-backed volumes at scrape time, one series per claim', async (t) => {
  const metrics = new KubeletMetrics({ nodeName: 'node1' });
  let reads = 0;
  let volumes = [
    { namespace: 'ns', claimName: 'data', capacityBytes: 1000, availableBytes: 600, usedBytes: 400, inodes: 100, inodesFree: 90, inodesUsed: 10 },
    // The same claim in a second pod: reported once.
    { namespace: 'ns', claimName: 'data', capacityBytes: 1, availableBytes: 1, usedBytes: 1 },
    // A volume that tells only its bytes used.
    { namespace: 'other', claimName: 'logs', usedBytes: 42 },
  ];
  metrics.watchVolumeStats(async () => {
    reads++;
    return volumes;
  });
  let text = await metrics.metrics();
  t.equal(reads, 1, 'one read of the stats per scrape');
  t.match(text, '# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume\n# TYPE kubelet_volume_stats_capacity_bytes gauge');
  t.equal(sample(text, 'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="data"}'), 1000);
  t.equal(sample(text, 'kubelet_volume_stats_available_bytes{namespace="ns",persistentvolumeclaim="data"}'), 600);
  t.equal(sample(text, 'kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="data"}'), 400);
  t.equal(sample(text, 'kubelet_volume_stats_inodes{namespace="ns",persistentvolumeclaim="data"}'), 100);
  t.equal(sample(text, 'kubelet_volume_stats_inodes_free{namespace="ns",persistentvolumeclaim="data"}'), 90);
  t.equal(sample(text, 'kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="data"}'), 10);
  t.equal(sample(text, 'kubelet_volume_stats_used_bytes{namespace="other",persistentvolumeclaim="logs"}'), 42);
  t.equal(sample(text, 'kubelet_volume_stats_capacity_bytes{namespace="other",persistentvolumeclaim="logs"}'), undefined, 'a figure not told is left out');

  // A claim whose pods are gone disappears at the next scrape.
  volumes = [{ namespace: 'other', claimName: 'logs', usedBytes: 43 }];
  await new Promise((resolve) => setImmediate(resolve));
  text = await metrics.metrics();
  t.equal(reads, 2);
  t.equal(sample(text, 'kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="data"}'), undefined);
  t.equal(sample(text, 'kubelet_volume_stats_used_bytes{namespace="other",persistentvolumeclaim="logs"}'), 43);
});
