import t from 'tap';
import { escapeLabelValue, formatGoFloat, renderCadvisorMetrics, renderFamilies, renderResourceMetrics, scrapeResourceMetrics, type Summary } from '../src/index.js';
import { FakeSummaryProvider } from '../src/testing.js';
import { RecordingLogger } from '@kubelet-ts/core/testing';

t.test('formatGoFloat writes floats as Go strconv.FormatFloat(v, g, -1, 64)', async (t) => {
  const cases: [number, string][] = [
    [0, '0'],
    [-0, '0'],
    [1, '1'],
    [-1, '-1'],
    [10, '10'],
    [1000, '1000'],
    [123456, '123456'],
    [999999, '999999'],
    [1e6, '1e+06'],
    [1234567, '1.234567e+06'],
    [123456789, '1.23456789e+08'],
    [1.5, '1.5'],
    [22189.453904193, '22189.453904193'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [0.000123, '0.000123'],
    [1.7955754e9, '1.7955754e+09'],
    [1e21, '1e+21'],
    [1e100, '1e+100'],
    [-2.5e-7, '-2.5e-07'],
    [NaN, 'NaN'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
  ];
  for (const [value, text] of cases) t.equal(formatGoFloat(value), text, String(value));
});

t.test('label values and help are escaped per the exposition format', async (t) => {
  t.equal(escapeLabelValue('a"b\\c\nd'), 'a\\"b\\\\c\\nd');
  const text = renderFamilies([{ name: 'm', help: 'line\\one\nline "two"', type: 'gauge', samples: [{ labels: { b: 'x"y', a: 'z\n' }, value: 2 }] }]);
  t.equal(text, '# HELP m line\\\\one\\nline "two"\n# TYPE m gauge\nm{a="z\\n",b="x\\"y"} 2\n');
});

t.test('renderFamilies sorts families and samples, drops empty families and repeated label sets', async (t) => {
  const text = renderFamilies([
    { name: 'zeta', help: 'z', type: 'counter', samples: [{ labels: { l: 'b' }, value: 1, timestampMs: 5 }, { labels: { l: 'a' }, value: 2 }, { labels: { l: 'b' }, value: 3 }] },
    { name: 'alpha', help: 'a', type: 'gauge', samples: [{ labels: {}, value: 0.5 }] },
    { name: 'empty', help: 'e', type: 'gauge', samples: [] },
  ]);
  t.equal(text, '# HELP alpha a\n# TYPE alpha gauge\nalpha 0.5\n# HELP zeta z\n# TYPE zeta counter\nzeta{l="a"} 2\nzeta{l="b"} 1 5\n');
});

// Go's TestCollectResourceMetrics (1.20) cases, byte for byte (timestamps at Unix(2, 0) = 2000 ms).
const testTime = '1970-01-01T00:00:02Z';

t.test('/metrics/resource: a failed summary is scrape_error 1 only', async (t) => {
  t.equal(
    renderResourceMetrics(null),
    `# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 1
`,
  );
});

t.test('/metrics/resource: node metrics', async (t) => {
  const summary: Summary = {
    node: {
      nodeName: 'n',
      startTime: testTime,
      cpu: { time: testTime, usageCoreNanoSeconds: 10_000_000_000 },
      memory: { time: testTime, workingSetBytes: 1000 },
    },
    pods: [],
  };
  t.equal(
    renderResourceMetrics(summary),
    `# HELP node_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 10 2000
# HELP node_memory_working_set_bytes [ALPHA] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1000 2000
# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`,
  );
});

const container = (name: string, startTime = testTime) => ({
  name,
  startTime,
  cpu: { time: testTime, usageCoreNanoSeconds: 10_000_000_000 },
  memory: { time: testTime, workingSetBytes: 1000 },
});

t.test('/metrics/resource: containers, pods and start times', async (t) => {
  const summary: Summary = {
    node: { nodeName: 'n', startTime: testTime },
    pods: [
      {
        podRef: { name: 'pod_a', namespace: 'namespace_a', uid: 'a' },
        startTime: testTime,
        containers: [container('container_a', '2021-06-22T21:11:18Z'), container('container_b', '0001-01-01T00:00:00Z')],
        cpu: { time: testTime, usageCoreNanoSeconds: 20_000_000_000 },
        memory: { time: testTime, workingSetBytes: 2000 },
      },
      {
        podRef: { name: 'pod_b', namespace: 'namespace_b', uid: 'b' },
        startTime: testTime,
        containers: [container('container_a', '2021-06-22T21:11:18Z'), { name: 'no_figures', startTime: testTime }],
        cpu: { time: testTime, usageCoreNanoSeconds: 1_500_000_000 },
      },
    ],
  };
  t.equal(
    renderResourceMetrics(summary),
    `# HELP container_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="container_a",namespace="namespace_a",pod="pod_a"} 10 2000
container_cpu_usage_seconds_total{container="container_a",namespace="namespace_b",pod="pod_b"} 10 2000
container_cpu_usage_seconds_total{container="container_b",namespace="namespace_a",pod="pod_a"} 10 2000
# HELP container_memory_working_set_bytes [ALPHA] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="container_a",namespace="namespace_a",pod="pod_a"} 1000 2000
container_memory_working_set_bytes{container="container_a",namespace="namespace_b",pod="pod_b"} 1000 2000
container_memory_working_set_bytes{container="container_b",namespace="namespace_a",pod="pod_a"} 1000 2000
# HELP container_start_time_seconds [ALPHA] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="container_a",namespace="namespace_a",pod="pod_a"} 1.624396278e+09
container_start_time_seconds{container="container_a",namespace="namespace_b",pod="pod_b"} 1.624396278e+09
container_start_time_seconds{container="no_figures",namespace="namespace_b",pod="pod_b"} 2
# HELP pod_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="namespace_a",pod="pod_a"} 20 2000
pod_cpu_usage_seconds_total{namespace="namespace_b",pod="pod_b"} 1.5 2000
# HELP pod_memory_working_set_bytes [ALPHA] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="namespace_a",pod="pod_a"} 2000 2000
# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`,
  );
});

t.test('scrapeResourceMetrics turns a provider failure into scrape_error 1 and logs it', async (t) => {
  const provider = new FakeSummaryProvider();
  provider.error = new Error('runtime down');
  const logger = new RecordingLogger();
  const text = await scrapeResourceMetrics(provider, logger);
  t.match(text, /^scrape_error 1$/m);
  t.equal(logger.entries.length, 1);
  t.match(logger.entries[0], { msg: 'Error getting summary for resourceMetric prometheus endpoint' });
  provider.error = undefined;
  t.match(await scrapeResourceMetrics(provider), /^scrape_error 0$/m);
  t.same(provider.calls, [{ method: 'getCPUAndMemoryStats' }, { method: 'getCPUAndMemoryStats' }]);
});

t.test('/metrics/cadvisor: root, pod and container series with cAdvisor names and labels', async (t) => {
  const time = '2026-01-01T00:00:10Z'; // 1767225610000 ms
  const summary: Summary = {
    node: {
      nodeName: 'n',
      startTime: '2026-01-01T00:00:00Z',
      cpu: { time, usageCoreNanoSeconds: 5e9 },
      memory: { time, usageBytes: 3000, workingSetBytes: 2000, rssBytes: 1000 },
      network: { time, name: 'eth0', rxBytes: 10, txBytes: 20, interfaces: [{ name: 'eth0', rxBytes: 10, txBytes: 20 }] },
      fs: { time, usedBytes: 12345 },
    },
    pods: [
      {
        podRef: { name: 'web', namespace: 'default', uid: 'u1' },
        startTime: '2026-01-01T00:00:05Z',
        containers: [
          {
            name: 'nginx',
            startTime: '2026-01-01T00:00:06Z',
            cpu: { time, usageCoreNanoSeconds: 250_000_000 },
            memory: { time, workingSetBytes: 4096, usageBytes: 8192 },
            rootfs: { time, usedBytes: 8192 },
          },
        ],
        cpu: { time, usageCoreNanoSeconds: 300_000_000 },
        memory: { time, workingSetBytes: 5000 },
        network: { time, name: 'eth0', rxBytes: 1, txBytes: 2, interfaces: [{ name: 'eth0', rxBytes: 1, txBytes: 2 }] },
      },
    ],
  };
  const text = renderCadvisorMetrics(summary, [
    { namespace: 'default', pod: 'web', container: 'nginx', id: '/kubepods/besteffort/podu1/abc', name: 'abc', image: 'nginx:1', device: '/dev/sda1' },
    { namespace: 'default', pod: 'web', container: '', id: '/kubepods/besteffort/podu1' },
  ]);
  const ts = ' 1767225610000';
  const pod = 'container="",id="/kubepods/besteffort/podu1",image="",name="",namespace="default",pod="web"';
  const ctr = 'container="nginx",id="/kubepods/besteffort/podu1/abc",image="nginx:1",name="abc",namespace="default",pod="web"';
  const root = 'container="",id="/",image="",name="",namespace="",pod=""';
  t.equal(
    text,
    [
      '# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.',
      '# TYPE container_cpu_usage_seconds_total counter',
      `container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 5${ts}`,
      `container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/besteffort/podu1",image="",name="",namespace="default",pod="web"} 0.3${ts}`,
      `container_cpu_usage_seconds_total{container="nginx",cpu="total",id="/kubepods/besteffort/podu1/abc",image="nginx:1",name="abc",namespace="default",pod="web"} 0.25${ts}`,
      '# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.',
      '# TYPE container_fs_usage_bytes gauge',
      `container_fs_usage_bytes{container="",device="",id="/",image="",name="",namespace="",pod=""} 12345${ts}`,
      `container_fs_usage_bytes{container="nginx",device="/dev/sda1",id="/kubepods/besteffort/podu1/abc",image="nginx:1",name="abc",namespace="default",pod="web"} 8192${ts}`,
      '# HELP container_memory_rss Size of RSS in bytes.',
      '# TYPE container_memory_rss gauge',
      `container_memory_rss{${root}} 1000${ts}`,
      '# HELP container_memory_usage_bytes Current memory usage in bytes, including all memory regardless of when it was accessed',
      '# TYPE container_memory_usage_bytes gauge',
      `container_memory_usage_bytes{${root}} 3000${ts}`,
      `container_memory_usage_bytes{${ctr}} 8192${ts}`,
      '# HELP container_memory_working_set_bytes Current working set in bytes.',
      '# TYPE container_memory_working_set_bytes gauge',
      `container_memory_working_set_bytes{${root}} 2000${ts}`,
      `container_memory_working_set_bytes{${pod}} 5000${ts}`,
      `container_memory_working_set_bytes{${ctr}} 4096${ts}`,
      '# HELP container_network_receive_bytes_total Cumulative count of bytes received',
      '# TYPE container_network_receive_bytes_total counter',
      `container_network_receive_bytes_total{container="",id="/",image="",interface="eth0",name="",namespace="",pod=""} 10${ts}`,
      `container_network_receive_bytes_total{container="",id="/kubepods/besteffort/podu1",image="",interface="eth0",name="",namespace="default",pod="web"} 1${ts}`,
      '# HELP container_network_transmit_bytes_total Cumulative count of bytes transmitted',
      '# TYPE container_network_transmit_bytes_total counter',
      `container_network_transmit_bytes_total{container="",id="/",image="",interface="eth0",name="",namespace="",pod=""} 20${ts}`,
      `container_network_transmit_bytes_total{container="",id="/kubepods/besteffort/podu1",image="",interface="eth0",name="",namespace="default",pod="web"} 2${ts}`,
      '# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise',
      '# TYPE container_scrape_error gauge',
      'container_scrape_error 0',
      '# HELP container_start_time_seconds Start time of the container since unix epoch in seconds.',
      '# TYPE container_start_time_seconds gauge',
      `container_start_time_seconds{${root}} 1.7672256e+09`,
      `container_start_time_seconds{${pod}} 1.767225605e+09`,
      `container_start_time_seconds{${ctr}} 1.767225606e+09`,
      '',
    ].join('\n'),
  );
});

t.test('/metrics/cadvisor: container_oom_events_total and the PSI families (waiting = some, stalled = full, µs to seconds), only where given', async (t) => {
  const summary: Summary = {
    node: { nodeName: 'n', startTime: '' },
    pods: [
      { podRef: { name: 'oom', namespace: 'ns', uid: 'u2' }, startTime: '', containers: [{ name: 'app', startTime: '' }, { name: 'side', startTime: '' }] },
      { podRef: { name: 'quiet', namespace: 'ns', uid: 'u3' }, startTime: '', containers: [] },
    ],
  };
  const readAt = 1767225610000;
  const text = renderCadvisorMetrics(summary, [
    {
      namespace: 'ns',
      pod: 'oom',
      container: '',
      id: '/kubepods/burstable/podu2',
      oomEvents: 2,
      pressure: { cpu: { some: { total: 2_500_000 }, full: { total: 1_500_000 } }, memory: { some: { total: 42 }, full: { total: 7 } }, io: { some: { total: 1 } } },
      timestampMs: readAt,
    },
    { namespace: 'ns', pod: 'oom', container: 'app', id: 'c1', name: 'c1', image: 'busybox', oomEvents: 1, timestampMs: readAt },
    // A container whose counters could not be read has no OOM or PSI samples; a pod without info neither.
    { namespace: 'ns', pod: 'oom', container: 'side', id: 'c2', name: 'c2', image: 'busybox' },
  ]);
  const pod = 'container="",id="/kubepods/burstable/podu2",image="",name="",namespace="ns",pod="oom"';
  const app = 'container="app",id="c1",image="busybox",name="c1",namespace="ns",pod="oom"';
  const ts = ` ${readAt}`;
  const families = text.split(/(?=^# HELP )/m).filter((f) => /container_(oom|pressure)_/.test(f));
  t.equal(
    families.join(''),
    [
      '# HELP container_oom_events_total Count of out of memory events observed for the container',
      '# TYPE container_oom_events_total counter',
      `container_oom_events_total{${pod}} 2${ts}`,
      `container_oom_events_total{${app}} 1${ts}`,
      '# HELP container_pressure_cpu_stalled_seconds_total Total time duration no tasks in the container could make progress due to CPU congestion.',
      '# TYPE container_pressure_cpu_stalled_seconds_total counter',
      `container_pressure_cpu_stalled_seconds_total{${pod}} 1.5${ts}`,
      '# HELP container_pressure_cpu_waiting_seconds_total Total time duration tasks in the container have waited due to CPU congestion.',
      '# TYPE container_pressure_cpu_waiting_seconds_total counter',
      `container_pressure_cpu_waiting_seconds_total{${pod}} 2.5${ts}`,
      '# HELP container_pressure_io_waiting_seconds_total Total time duration tasks in the container have waited due to IO congestion.',
      '# TYPE container_pressure_io_waiting_seconds_total counter',
      `container_pressure_io_waiting_seconds_total{${pod}} 1e-06${ts}`,
      '# HELP container_pressure_memory_stalled_seconds_total Total time duration no tasks in the container could make progress due to memory congestion.',
      '# TYPE container_pressure_memory_stalled_seconds_total counter',
      `container_pressure_memory_stalled_seconds_total{${pod}} 7e-06${ts}`,
      '# HELP container_pressure_memory_waiting_seconds_total Total time duration tasks in the container have waited due to memory congestion.',
      '# TYPE container_pressure_memory_waiting_seconds_total counter',
      `container_pressure_memory_waiting_seconds_total{${pod}} 4.2e-05${ts}`,
      '',
    ].join('\n'),
    'io has no full line here: container_pressure_io_stalled_seconds_total has no samples and is not rendered',
  );
  t.notMatch(text, /container_pressure_io_stalled_seconds_total/);
  const none = renderCadvisorMetrics(summary, []);
  t.notMatch(none, /container_oom_events_total|container_pressure_/, 'without figures neither family is rendered');
});
