// ContainerManager.podCgroupStats: the OOM counters and PSI of a pod cgroup and of the runtime's container cgroups
// below it, on both drivers and both cgroup versions, over FakeCgroupFs (v1 counts oom_kill in the victim's
// memory.oom_control only; v2's memory.events is hierarchical).
import t from 'tap';
import { FakeClock } from '@kubelet-ts/core/testing';
import { CgroupfsManager, containerIdFromCgroup, ContainerManager, createCgroupManager } from '../src/index.js';
import type { CgroupDriver, CgroupVersion } from '../src/index.js';
import { FakeCgroupFs, FakeCgroupManager, InMemorySystemdUnits } from '../src/testing.js';
import { CG, container, makePod } from './helpers.js';

const GiB = 2 ** 30;
const APP = 'a'.repeat(64);
const SANDBOX = 'b'.repeat(64);

const pod = makePod('8d5f2c1e-77aa-4b0c', [container('app', { requests: { memory: '32Mi' }, limits: { memory: '64Mi' } })]);

/** A node with the pod's cgroup made by the kubelet and the two container cgroups runc makes below it. */
async function node(driver: CgroupDriver, version: CgroupVersion) {
  const fs = new FakeCgroupFs({ version });
  const clock = new FakeClock();
  const cgroupManager = await createCgroupManager({ driver, fs, systemdUnits: driver === 'systemd' ? new InMemorySystemdUnits() : undefined, clock });
  const cm = new ContainerManager({ cgroupDriver: driver, cgroupManager, capacity: { milliCpu: 2000, memoryBytes: 4 * GiB }, clock });
  await cm.start(() => [pod]);
  await cm.newPodContainerManager().ensureExists(pod);
  const parent = cm.podCgroupParent(pod);
  const child = (id: string) => (driver === 'systemd' ? `cri-containerd-${id}.scope` : id);
  const dir = (cgroup: string, subsystem = 'memory') => (version === 'v1' ? `${CG}/${subsystem}${cgroup}` : `${CG}${cgroup}`);
  // runc: v2 enables the controllers in the pod cgroup's subtree_control, then makes the container's cgroup there.
  if (version === 'v2') await fs.writeFile(`${dir(parent)}/cgroup.subtree_control`, '+cpu +memory +pids');
  let pid = 100;
  for (const id of [SANDBOX, APP]) {
    for (const subsystem of version === 'v1' ? ['cpu', 'cpuacct', 'memory', 'pids'] : ['']) fs.mkdirp(`${dir(parent, subsystem)}/${child(id)}`);
    fs.addProcess(`${dir(parent)}/${child(id)}`, ++pid);
  }
  await cm.stop();
  return { fs, cm, parent, child, dir };
}

for (const driver of ['cgroupfs', 'systemd'] as const) {
  t.test(`${driver}, v1: oom_kill of the victim's cgroup; the pod's is the sum over it and its children; no PSI`, async (t) => {
    const { fs, cm, parent, child, dir } = await node(driver, 'v1');
    t.equal(parent, driver === 'systemd' ? '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d5f2c1e_77aa_4b0c.slice' : '/kubepods/burstable/pod8d5f2c1e-77aa-4b0c');
    const before = await cm.podCgroupStats(pod);
    t.same(before?.pod, { oomEvents: 0 });
    t.same(before?.containers.get(APP), { oomEvents: 0, cgroup: `${parent}/${child(APP)}` });
    // The pod's limit is hit, the app's process is the victim: v1 counts the kill in the app's cgroup only.
    t.same(fs.simulateOomKill(dir(parent), 102), [102]);
    t.equal(fs.read(`${dir(parent)}/memory.oom_control`)?.match(/oom_kill (\d+)/)?.[1], '0', "the kernel's count is in the victim's cgroup");
    const after = await cm.podCgroupStats(pod);
    t.same(after, {
      cgroup: parent,
      pod: { oomEvents: 1 },
      containers: new Map([
        [APP, { oomEvents: 1, cgroup: `${parent}/${child(APP)}` }],
        [SANDBOX, { oomEvents: 0, cgroup: `${parent}/${child(SANDBOX)}` }],
      ]),
    });
  });

  t.test(`${driver}, v2: memory.events is hierarchical (not summed again); PSI of the pod and its containers`, async (t) => {
    const { fs, cm, parent, child, dir } = await node(driver, 'v2');
    fs.setFile(`${dir(parent)}/cpu.pressure`, 'some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1500000');
    fs.setFile(`${dir(parent)}/${child(APP)}/memory.pressure`, 'some avg10=0.00 avg60=0.00 avg300=0.00 total=42\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7');
    t.same(fs.simulateOomKill(dir(parent), 102), [102]);
    const stats = await cm.podCgroupStats(pod);
    const zero = { avg10: 0, avg60: 0, avg300: 0, total: 0 };
    t.equal(stats?.pod.oomEvents, 1, 'counted once: the kernel propagated the kill to the pod cgroup');
    t.same(stats?.pod.pressure, {
      cpu: { some: { avg10: 1, avg60: 0.5, avg300: 0.1, total: 2500000 }, full: { avg10: 0, avg60: 0, avg300: 0, total: 1500000 } },
      memory: { some: zero, full: zero },
      io: { some: zero, full: zero },
    });
    t.equal(stats?.containers.get(APP)?.oomEvents, 1);
    t.same(stats?.containers.get(APP)?.pressure?.memory, { some: { ...zero, total: 42 }, full: { ...zero, total: 7 } });
    t.equal(stats?.containers.get(SANDBOX)?.oomEvents, 0);
    t.same([...(stats?.containers.keys() ?? [])].sort(), [APP, SANDBOX]);
  });

  t.test(`${driver}: a missing or unreadable cgroup or file leaves the figure out and does not throw`, async (t) => {
    const { fs, cm, parent, child, dir } = await node(driver, 'v2');
    fs.injectError('readFile', `${dir(parent)}/${child(APP)}/memory.events`, 'EACCES');
    fs.setFile(`${dir(parent)}/io.pressure`, 'garbage');
    const stats = await cm.podCgroupStats(pod);
    t.same(Object.keys(stats?.pod ?? {}), ['oomEvents'], 'the unparsable io.pressure drops the pod PSI, not the OOM count');
    t.notOk('oomEvents' in (stats?.containers.get(APP) ?? {}), 'unreadable memory.events: no count');
    t.ok(stats?.containers.get(APP)?.pressure, 'its PSI still read');
    const other = makePod('0000-1111', [container('app')]);
    t.same(await cm.podCgroupStats(other), { cgroup: cm.podCgroupParent(other), pod: {}, containers: new Map() }, 'a pod without a cgroup: no figures');
  });
}

t.test('without cgroupsPerQOS there is no pod cgroup to read', async (t) => {
  const cm = new ContainerManager({ cgroupsPerQOS: false, cgroupManager: new FakeCgroupManager('v2'), capacity: { milliCpu: 1000, memoryBytes: GiB } });
  t.equal(await cm.podCgroupStats(pod), undefined);
});

t.test('FakeCgroupManager: counters and PSI as set, per live cgroup or child', async (t) => {
  const fake = new FakeCgroupManager('v2');
  fake.seed(['kubepods', 'pod1', 'c1']);
  fake.oomEvents.set('/kubepods/pod1/c1', { oomKill: 2 });
  fake.pressureStats.set('/kubepods/pod1', { io: { some: { avg10: 0, avg60: 0, avg300: 0, total: 9 } } });
  t.same(await fake.memoryEvents(['kubepods', 'pod1'], 'c1'), { oomKill: 2 });
  t.same(await fake.memoryEvents(['kubepods', 'pod1']), { oomKill: 0 });
  t.equal(await fake.memoryEvents(['kubepods', 'gone']), undefined);
  t.same(await fake.pressure(['kubepods', 'pod1']), { io: { some: { avg10: 0, avg60: 0, avg300: 0, total: 9 } } });
  t.equal(await new FakeCgroupManager('v1').pressure([]), undefined, 'v1 has no PSI');
});

t.test('a child is one directory name; anything else is an error naming it', async (t) => {
  const manager = new CgroupfsManager({ version: 'v2', fs: new FakeCgroupFs({ version: 'v2' }) });
  await t.rejects(manager.memoryEvents(['kubepods'], '../etc'), { message: 'invalid child cgroup "../etc" of [kubepods]: want one directory name' });
  await t.rejects(manager.pressure(['kubepods'], ''), { message: 'invalid child cgroup "" of [kubepods]: want one directory name' });
});

t.test('containerIdFromCgroup: the id in a runtime cgroup name', async (t) => {
  t.equal(containerIdFromCgroup(APP), APP, 'cgroupfs: the id itself');
  t.equal(containerIdFromCgroup(`cri-containerd-${APP}.scope`), APP, 'containerd on systemd');
  t.equal(containerIdFromCgroup(`crio-${APP}.scope`), APP, 'CRI-O on systemd');
  t.equal(containerIdFromCgroup(`crio-${APP}`), APP, 'CRI-O on cgroupfs');
  t.equal(containerIdFromCgroup('some-name'), 'some-name', 'anything else as it is');
});
