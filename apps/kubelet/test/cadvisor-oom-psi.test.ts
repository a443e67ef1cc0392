// /metrics/cadvisor's container_oom_events_total and container_pressure_* as the kubelet builds them
// (cadvisorContainerInfos + renderCadvisorMetrics): a ContainerManager on FakeCgroupFs, the cgroupfs and systemd
// drivers, cgroup v1 and v2, a pod whose container was OOM-killed.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { ContainerManager, createCgroupManager, type CgroupDriver, type CgroupVersion } from '@kubelet-ts/container-manager';
import { FakeCgroupFs, InMemorySystemdUnits } from '@kubelet-ts/container-manager/testing';
import { renderCadvisorMetrics, type Summary } from '@kubelet-ts/stats';
import { cadvisorContainerInfos } from '../src/cadvisor-info.js';

const CG = '/sys/fs/cgroup';
const APP = 'a'.repeat(64);
const SANDBOX = 'b'.repeat(64);
const UID = '8d5f2c1e-77aa-4b0c';

const pod: V1Pod = {
  metadata: { name: 'oom', namespace: 'ns', uid: UID },
  spec: { containers: [{ name: 'app', image: 'busybox', resources: { requests: { memory: '32Mi' }, limits: { memory: '32Mi' } } }] },
};
const summary: Summary = {
  node: { nodeName: 'n', startTime: '' },
  pods: [{ podRef: { name: 'oom', namespace: 'ns', uid: UID }, startTime: '', containers: [{ name: 'app', startTime: '' }] }],
};
const running = [
  {
    id: APP,
    image: { image: 'busybox' },
    labels: { 'io.kubernetes.pod.namespace': 'ns', 'io.kubernetes.pod.name': 'oom', 'io.kubernetes.container.name': 'app' },
  } as unknown as runtimeapi.Container,
];

/** The kubelet's pod cgroup and runc's sandbox and app cgroups below it, the app's process OOM-killed once. */
async function oomKilledPod(driver: CgroupDriver, version: CgroupVersion, logger: RecordingLogger) {
  const fs = new FakeCgroupFs({ version });
  const clock = new FakeClock();
  const cgroupManager = await createCgroupManager({ driver, fs, systemdUnits: driver === 'systemd' ? new InMemorySystemdUnits() : undefined, clock });
  const cm = new ContainerManager({ cgroupDriver: driver, cgroupManager, capacity: { milliCpu: 2000, memoryBytes: 4 * 2 ** 30 }, clock, logger });
  await cm.start(() => [pod]);
  await cm.stop();
  await cm.newPodContainerManager().ensureExists(pod);
  const parent = cm.podCgroupParent(pod);
  const dir = (subsystem: string) => (version === 'v1' ? `${CG}/${subsystem}${parent}` : `${CG}${parent}`);
  const child = (id: string) => (driver === 'systemd' ? `cri-containerd-${id}.scope` : id);
  if (version === 'v2') await fs.writeFile(`${dir('')}/cgroup.subtree_control`, '+cpu +memory +pids');
  for (const [pid, id] of [[1, SANDBOX], [2, APP], [3, APP]] as const) {
    for (const subsystem of version === 'v1' ? ['cpu', 'memory', 'pids'] : ['']) fs.mkdirp(`${dir(subsystem)}/${child(id)}`);
    fs.addProcess(`${dir('memory')}/${child(id)}`, pid);
  }
  // The pod's 32Mi is hit; the victim is the app's process 2 (v1 counts the kill in the app's cgroup only).
  fs.simulateOomKill(dir('memory'), 2);
  if (version === 'v2') {
    fs.setFile(`${dir('')}/memory.pressure`, 'some avg10=3.00 avg60=1.00 avg300=0.20 total=1250000\nfull avg10=2.00 avg60=0.50 avg300=0.10 total=750000');
    fs.setFile(`${dir('')}/${child(APP)}/cpu.pressure`, 'some avg10=0.00 avg60=0.00 avg300=0.00 total=500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0');
  }
  return { fs, cm, clock, parent, dir, child };
}

for (const driver of ['cgroupfs', 'systemd'] as const) {
  for (const version of ['v1', 'v2'] as const) {
    t.test(`${driver} driver, cgroup ${version}: the pod's and its container's OOM count${version === 'v2' ? ' and PSI' : ''}`, async (t) => {
      const logger = new RecordingLogger();
      const { cm, clock, parent } = await oomKilledPod(driver, version, logger);
      const infos = await cadvisorContainerInfos({ summary, containers: running, containerManager: cm, podByUid: (uid) => (uid === UID ? pod : undefined), clock, logger });
      const text = renderCadvisorMetrics(summary, infos);
      const ts = ` ${clock.now()}`;
      const podLabels = `container="",id="${parent}",image="",name="",namespace="ns",pod="oom"`;
      const appLabels = `container="app",id="${APP}",image="busybox",name="${APP}",namespace="ns",pod="oom"`;
      const lines = text.split('\n');
      t.ok(lines.includes(`container_oom_events_total{${podLabels}} 1${ts}`), `the pod series counts the kill once (${version === 'v1' ? "summed from the app's cgroup" : 'hierarchical memory.events'})`);
      t.ok(lines.includes(`container_oom_events_total{${appLabels}} 1${ts}`), "the app container's series");
      t.equal(lines.filter((l) => l.startsWith('container_oom_events_total{')).length, 2, "the sandbox's cgroup has no series of its own");
      t.match(text, '# HELP container_oom_events_total Count of out of memory events observed for the container\n# TYPE container_oom_events_total counter\n');
      if (version === 'v1') {
        t.notMatch(text, /container_pressure_/, 'no PSI on v1');
      } else {
        t.ok(lines.includes(`container_pressure_memory_waiting_seconds_total{${podLabels}} 1.25${ts}`), 'pod memory some total');
        t.ok(lines.includes(`container_pressure_memory_stalled_seconds_total{${podLabels}} 0.75${ts}`), 'pod memory full total');
        t.ok(lines.includes(`container_pressure_cpu_waiting_seconds_total{${appLabels}} 0.0005${ts}`), 'container cpu some total');
        t.ok(lines.includes(`container_pressure_cpu_stalled_seconds_total{${appLabels}} 0${ts}`), 'container cpu full total');
        t.equal(lines.filter((l) => l.startsWith('container_pressure_io_waiting_seconds_total{')).length, 2, 'io.pressure of the pod and the app (the kernel default, zero)');
      }
    });
  }
}

t.test('a pod cgroup that cannot be read: no OOM/PSI samples, logged at v(4), the scrape goes on', async (t) => {
  const logger = new RecordingLogger();
  const { fs, cm, clock, child } = await oomKilledPod('cgroupfs', 'v2', logger);
  fs.injectError('readFile', /memory\.events$/, 'EACCES');
  const infos = await cadvisorContainerInfos({ summary, containers: running, containerManager: cm, podByUid: () => pod, clock, logger });
  const text = renderCadvisorMetrics(summary, infos);
  t.notMatch(text, /container_oom_events_total/, 'no counts');
  t.match(text, /container_pressure_memory_waiting_seconds_total\{container="",/, 'the PSI still read');
  const logged = logger.entries.filter((e) => e.v === 4 && e.msg === 'Unable to read the OOM counters of the cgroup');
  t.same(logged.map((e) => e.kv.cgroup).sort(), [`/kubepods/burstable/pod${UID}`, `/kubepods/burstable/pod${UID}/${child(APP)}`, `/kubepods/burstable/pod${UID}/${child(SANDBOX)}`]);
});

t.test('without a container manager (cgroupsPerQOS false) or a known pod: only the CRI labels, no OOM/PSI figures', async (t) => {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const expected = [{ namespace: 'ns', pod: 'oom', container: 'app', id: APP, name: APP, image: 'busybox' }];
  t.same(await cadvisorContainerInfos({ summary, containers: running, podByUid: () => pod, clock, logger }), expected);
  const { cm } = await oomKilledPod('cgroupfs', 'v1', logger);
  t.same(await cadvisorContainerInfos({ summary, containers: running, containerManager: cm, podByUid: () => undefined, clock, logger }), expected);
});
