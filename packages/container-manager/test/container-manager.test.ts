import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeletEventReason, nodeReference } from '@kubelet-ts/core';
import { FakeClock, RecordingEventRecorder } from '@kubelet-ts/core/testing';
import {
  CgroupfsManager,
  ContainerManager,
  NoopPodContainerManager,
  PodContainerManager,
  validateContainerManagerOptions,
  type ContainerManagerOptions,
} from '../src/index.js';
import { FakeCgroupFs, FakeCgroupManager } from '../src/testing.js';
import { bestEffortPod, burstablePod, CG, guaranteedPod } from './helpers.js';

const GiB = 2 ** 30;
const capacity = { milliCpu: 4000, memoryBytes: 8 * GiB, pids: 32768 };

function setup(opts: Partial<ContainerManagerOptions> = {}) {
  const cgroupManager = new FakeCgroupManager();
  const clock = new FakeClock();
  const recorder = new RecordingEventRecorder();
  const cm = new ContainerManager({ capacity, cgroupManager, clock, recorder, nodeRef: nodeReference('node-1'), ...opts });
  return { cgroupManager, clock, recorder, cm };
}

t.test('start creates kubepods with node allocatable, then the QoS cgroups', async (t) => {
  const { cgroupManager, clock, recorder, cm } = setup({
    systemReserved: { cpu: '500m', memory: '1Gi', pid: '1000' },
    kubeReserved: { cpu: '100m', memory: '512Mi' },
  });
  t.same(cm.nodeAllocatableAbsolute(), { milliCpu: 3400, memoryBytes: 8 * GiB - 1.5 * GiB, pids: 31768 });
  await cm.start(() => []);
  t.same(cgroupManager.created, [
    { name: ['kubepods'], resources: { memoryLimitBytes: 6.5 * GiB, cpuShares: 3481, pidsLimit: 31768 } },
    { name: ['kubepods', 'burstable'], resources: {} },
    { name: ['kubepods', 'besteffort'], resources: { cpuShares: 2 } },
  ]);
  t.same(cgroupManager.updated.map((u) => [u.name.join('/'), u.resources]), [
    ['kubepods', {}],
    ['kubepods/burstable', { cpuShares: 2 }],
    ['kubepods/besteffort', { cpuShares: 2 }],
    ['kubepods', { memoryLimitBytes: 6.5 * GiB, cpuShares: 3481, pidsLimit: 31768 }],
  ], 'the first QoS update, then the node allocatable enforcement');
  t.same(recorder.lines(), ['Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods']);
  t.same(recorder.events[0].object, nodeReference('node-1'));
  t.same(cm.getQOSContainersInfo(), { guaranteed: ['kubepods'], burstable: ['kubepods', 'burstable'], bestEffort: ['kubepods', 'besteffort'] });
  const status = cm.status();
  t.equal(status.started, true);
  t.equal(status.nodeAllocatableCgroup, '/kubepods');
  t.same(status.cgroups['/kubepods'].resources, { memoryLimitBytes: 6.5 * GiB, cpuShares: 3481, pidsLimit: 31768 });
  t.equal(status.cgroups['/kubepods/besteffort'].resources.cpuShares, 2);
  t.equal(status.lastQOSUpdateMs, clock.now());
  await cm.stop();
  t.equal(clock.pendingTimers(), 0, 'stop leaves no timers');
});

t.test('kubepods gets the capacity when pods are not enforced; existing cgroups are updated, not created', async (t) => {
  const { cgroupManager, cm } = setup({ enforceNodeAllocatable: [], systemReserved: { memory: '1Gi' } });
  cgroupManager.seed(['kubepods', 'burstable']);
  await cm.start(() => []);
  t.same(cgroupManager.created, [{ name: ['kubepods', 'besteffort'], resources: { cpuShares: 2 } }]);
  t.same(cgroupManager.updated.at(-1), { name: ['kubepods'], resources: { memoryLimitBytes: 8 * GiB, cpuShares: 4096, pidsLimit: 32768 } });
  t.ok(cgroupManager.updated.some((u) => u.name.join('/') === 'kubepods/burstable'), 'the existing burstable cgroup is updated on start');
  await cm.stop();
});

t.test('the QoS cgroups follow the burstable pods, per call and every minute', async (t) => {
  const { cgroupManager, clock, cm } = setup();
  let pods: V1Pod[] = [guaranteedPod('g1', '2'), burstablePod('b1', '250m'), bestEffortPod('e1')];
  await cm.start(() => pods);
  t.same(cgroupManager.config(['kubepods', 'burstable']), { cpuShares: 256 });
  t.same(cgroupManager.config(['kubepods', 'besteffort']), { cpuShares: 2 });

  pods = [...pods, burstablePod('b2', '750m')];
  await cm.updateQOSCgroups();
  t.same(cgroupManager.config(['kubepods', 'burstable']), { cpuShares: 1024 }, 'sum of burstable requests: 1000m');

  pods = pods.filter((p) => p.metadata?.uid !== 'b1');
  const before = cgroupManager.updated.length;
  await clock.advance(59_000);
  t.equal(cgroupManager.updated.length, before, 'nothing before a minute');
  await clock.advance(1_000);
  t.same(cgroupManager.config(['kubepods', 'burstable']), { cpuShares: 768 }, 'the periodic update saw b1 go');

  pods = [];
  await clock.advance(60_000);
  t.same(cgroupManager.config(['kubepods', 'burstable']), { cpuShares: 2 }, 'no burstable pods: the minimum');

  cgroupManager.errors.set('update', new Error('boom'));
  await t.rejects(cm.updateQOSCgroups(), { message: 'boom' });
  t.same(cm.status().errors.map((e) => [e.operation, e.cgroup, e.message]), [['update', '/kubepods', 'boom']]);
  await cm.updateQOSCgroups(); // the next one works
  await cm.stop();
  t.equal(clock.pendingTimers(), 0);
  const count = cgroupManager.updated.length;
  await clock.advance(120_000);
  t.equal(cgroupManager.updated.length, count, 'no update after stop');
});

t.test('pod cgroups: podCgroupParent and the PodContainerManager share the QoS layout', async (t) => {
  const { cgroupManager, cm } = setup({ cgroupRoot: '/custom', podPidsLimit: 100 });
  cgroupManager.seed(['custom']);
  await cm.start(() => []);
  t.equal(cm.podCgroupParent(burstablePod('b1')), '/custom/kubepods/burstable/podb1');
  t.equal(cm.podCgroupParent(guaranteedPod('g1')), '/custom/kubepods/podg1');
  const pcm = cm.newPodContainerManager();
  t.ok(pcm instanceof PodContainerManager);
  await pcm.ensureExists(bestEffortPod('e1'));
  t.same(cgroupManager.created.at(-1), { name: ['custom', 'kubepods', 'besteffort', 'pode1'], resources: { cpuShares: 2, pidsLimit: 100 } });
  t.ok(cm.status().cgroups['/custom/kubepods/besteffort/pode1'], 'status shows pod cgroups');
  await pcm.destroy(['custom', 'kubepods', 'besteffort', 'pode1']);
  t.notOk(cm.status().cgroups['/custom/kubepods/besteffort/pode1'], 'and forgets destroyed ones');
  await cm.stop();
});

t.test('without cgroupsPerQOS: no cgroups, the noop pod container manager, an empty cgroup parent', async (t) => {
  const { cgroupManager, clock, cm } = setup({ cgroupsPerQOS: false });
  await cm.start(() => [burstablePod('b1')]);
  t.same(cgroupManager.created, []);
  t.same(cgroupManager.updated, []);
  t.equal(cm.podCgroupParent(burstablePod('b1')), '');
  t.ok(cm.newPodContainerManager() instanceof NoopPodContainerManager);
  t.same(cm.getQOSContainersInfo(), { guaranteed: [], burstable: [], bestEffort: [] });
  t.equal(cm.status().nodeAllocatableCgroup, '');
  await cm.updateQOSCgroups();
  t.equal(clock.pendingTimers(), 0);
  await cm.stop();
});

t.test('system-reserved and kube-reserved are enforced on their existing cgroups', async (t) => {
  const { cgroupManager, recorder, cm } = setup({
    enforceNodeAllocatable: ['pods', 'system-reserved', 'kube-reserved'],
    systemReservedCgroup: '/system.slice',
    kubeReservedCgroup: '/kube.slice',
    systemReserved: { cpu: '1', memory: '1Gi', pid: '500' },
    kubeReserved: { cpu: '200m', memory: '256Mi' },
  });
  cgroupManager.seed(['system.slice']);
  cgroupManager.seed(['kube.slice']);
  await cm.start(() => []);
  t.same(cgroupManager.config(['system.slice']), { memoryLimitBytes: GiB, cpuShares: 1024, pidsLimit: 500 });
  t.same(cgroupManager.config(['kube.slice']), { memoryLimitBytes: 256 * 2 ** 20, cpuShares: 204 });
  t.same(recorder.lines(), [
    'Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods',
    'Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice',
    'Normal NodeAllocatableEnforced Updated limits on kube reserved cgroup /kube.slice',
  ]);
  await cm.stop();
});

t.test('a reserved cgroup that does not exist or has no reservation fails start with an event', async (t) => {
  const missing = setup({ enforceNodeAllocatable: ['pods', 'system-reserved'], systemReservedCgroup: '/system.slice', systemReserved: { memory: '1Gi' } });
  await t.rejects(missing.cm.start(() => []), { message: 'Failed to enforce System Reserved Cgroup Limits on "/system.slice": ["system.slice"] cgroup does not exist' });
  t.same(missing.recorder.lines().at(-1), 'Warning FailedNodeAllocatableEnforcement Failed to enforce System Reserved Cgroup Limits on "/system.slice": ["system.slice"] cgroup does not exist');
  await missing.cm.stop();

  const unset = setup({ enforceNodeAllocatable: ['kube-reserved'], kubeReservedCgroup: '/kube.slice' });
  unset.cgroupManager.seed(['kube.slice']);
  await t.rejects(unset.cm.start(() => []), { message: 'Failed to enforce Kube Reserved Cgroup Limits on "/kube.slice": ["kube.slice"] cgroup is not config properly' });
  await unset.cm.stop();
});

t.test('a failing kubepods update is reported and retried every minute until it works', async (t) => {
  const { cgroupManager, clock, recorder, cm } = setup();
  const realUpdate = cgroupManager.update.bind(cgroupManager);
  let failKubepods = true;
  cgroupManager.update = async (name, resources) => {
    if (failKubepods && name.length === 1 && resources.memoryLimitBytes !== undefined) throw new Error('device or resource busy');
    return realUpdate(name, resources);
  };
  await cm.start(() => []);
  t.same(recorder.lines(), ['Warning FailedNodeAllocatableEnforcement Failed to update Node Allocatable Limits ["kubepods"]: device or resource busy']);
  await clock.advance(60_000);
  t.equal(recorder.reasons().length, 2, 'retried after a minute');
  failKubepods = false;
  await clock.advance(60_000);
  t.same(recorder.reasons(), [KubeletEventReason.FailedNodeAllocatableEnforcement, KubeletEventReason.FailedNodeAllocatableEnforcement, KubeletEventReason.SuccessfulNodeAllocatableEnforcement]);
  await clock.advance(180_000);
  t.equal(recorder.reasons().length, 3, 'no more retries once it worked');
  await cm.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('validation: Go\'s messages', async (t) => {
  const base = { capacity };
  const check = (opts: Partial<ContainerManagerOptions>, message: string) => t.throws(() => validateContainerManagerOptions({ ...base, ...opts }), { message });
  check(
    { enforceNodeAllocatable: ['system-reserved'] },
    'invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when system-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable)',
  );
  check(
    { enforceNodeAllocatable: ['kube-reserved'] },
    'invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when kube-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable)',
  );
  check(
    { enforceNodeAllocatable: ['none', 'pods'] },
    "invalid configuration: EnforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when 'none' is specified",
  );
  check(
    { enforceNodeAllocatable: ['memory'] },
    'invalid configuration: option "memory" specified for EnforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "kube-reserved", or "none"',
  );
  check(
    { cgroupsPerQOS: false, enforceNodeAllocatable: ['pods'] },
    'invalid configuration: EnforceNodeAllocatable (--enforce-node-allocatable) is not supported unless CgroupsPerQOS (--cgroups-per-qos) feature is turned on',
  );
  check(
    { enforceNodeAllocatable: ['system-reserved', 'kube-reserved'] },
    '[invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when system-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable), invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when kube-reserved contained in EnforceNodeAllocatable (--enforce-node-allocatable)]',
  );
  check({ systemReserved: { memory: 'lots' } }, `invalid configuration: systemReserved "memory": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`);
  t.doesNotThrow(() => validateContainerManagerOptions({ ...base, enforceNodeAllocatable: ['none'] }));
  t.doesNotThrow(() => validateContainerManagerOptions({ ...base, cgroupsPerQOS: false }), 'no enforcement by default without cgroupsPerQOS');

  const { cm, cgroupManager } = setup({ enforceNodeAllocatable: ['bogus'] });
  await t.rejects(cm.start(() => []), { message: /option "bogus" specified/ });
  t.same(cgroupManager.created, [], 'nothing made on invalid configuration');
});

t.test('start rejects reservations above capacity, a missing cgroup root, the systemd driver without systemd', async (t) => {
  const over = setup({ systemReserved: { memory: '6Gi' }, kubeReserved: { memory: '3Gi' } });
  await t.rejects(over.cm.start(() => []), { message: 'invalid Node Allocatable configuration. Resource "memory" has an allocatable of 9Gi, capacity of -1Gi' });
  t.same(over.cm.nodeAllocatableAbsolute().memoryBytes, 0, 'never negative');

  const noRoot = setup({ cgroupRoot: '/missing' });
  await t.rejects(noRoot.cm.start(() => []), { message: 'invalid configuration: cgroup-root "/missing" doesn\'t exist' });

  const systemd = new ContainerManager({ capacity, cgroupDriver: 'systemd', clock: new FakeClock() });
  const noSystemd =
    'systemd cgroup manager not available: the systemd cgroup driver needs a connection to systemd (the systemdUnits option, e.g. a SystemdDbusUnitManager on the system bus) or a cgroupManager';
  await t.rejects(systemd.start(() => []), { message: noSystemd });
  t.throws(() => systemd.newPodContainerManager(), { message: noSystemd });
});

t.test('end to end on a fake cgroup v1 tree: the files Go would write', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v1' });
  const clock = new FakeClock();
  const cgroupManager = new CgroupfsManager({ version: 'v1', fs, clock });
  const cm = new ContainerManager({ capacity: { milliCpu: 2000, memoryBytes: 4 * GiB }, systemReserved: { cpu: '500m', memory: '1Gi' }, cgroupManager, clock });
  await cm.start(() => [burstablePod('b1', '500m')]);
  t.equal(fs.read(`${CG}/memory/kubepods/memory.limit_in_bytes`), String(3 * GiB));
  t.equal(fs.read(`${CG}/cpu/kubepods/cpu.shares`), '1536');
  t.equal(fs.read(`${CG}/cpu/kubepods/burstable/cpu.shares`), '512');
  t.equal(fs.read(`${CG}/cpu/kubepods/besteffort/cpu.shares`), '2');
  const pcm = cm.newPodContainerManager();
  await pcm.ensureExists(guaranteedPod('g1', '250m', '64Mi'));
  t.equal(fs.read(`${CG}/cpu/kubepods/podg1/cpu.cfs_quota_us`), '25000');
  t.equal(fs.read(`${CG}/memory/kubepods/podg1/memory.limit_in_bytes`), String(64 * 2 ** 20));
  t.same([...(await pcm.getAllPodsFromCgroups()).keys()], ['g1']);
  await pcm.destroy(['kubepods', 'podg1']);
  t.notOk(fs.isDir(`${CG}/cpu/kubepods/podg1`));
  await cm.stop();
});

t.test('end to end on a fake cgroup v2 tree', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2' });
  const clock = new FakeClock();
  const cgroupManager = new CgroupfsManager({ version: 'v2', fs, clock });
  const cm = new ContainerManager({ capacity: { milliCpu: 2000, memoryBytes: 4 * GiB, pids: 4096 }, cgroupManager, clock, podPidsLimit: 64 });
  await cm.start(() => [burstablePod('b1', '1')]);
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), 'cpuset cpu memory hugetlb pids');
  t.equal(fs.read(`${CG}/kubepods/memory.max`), String(4 * GiB));
  t.equal(fs.read(`${CG}/kubepods/cpu.weight`), '79', 'shares 2048 -> weight 79');
  t.equal(fs.read(`${CG}/kubepods/pids.max`), '4096');
  t.equal(fs.read(`${CG}/kubepods/burstable/cpu.weight`), '39');
  t.equal(fs.read(`${CG}/kubepods/besteffort/cpu.weight`), '1');
  await cm.newPodContainerManager().ensureExists(guaranteedPod('g1', '500m', '128Mi'));
  t.equal(fs.read(`${CG}/kubepods/podg1/cpu.max`), '50000 100000');
  t.equal(fs.read(`${CG}/kubepods/podg1/memory.max`), String(128 * 2 ** 20));
  t.equal(fs.read(`${CG}/kubepods/podg1/pids.max`), '64');
  await cm.stop();
});
