import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { CgroupfsManager, cleanupOrphanedPodCgroups, NoopPodContainerManager, PodContainerManager, type QOSContainersInfo } from '../src/index.js';
import { FakeCgroupFs, FakeCgroupManager } from '../src/testing.js';
import { bestEffortPod, burstablePod, CG, guaranteedPod } from './helpers.js';

const qos: QOSContainersInfo = { guaranteed: ['kubepods'], burstable: ['kubepods', 'burstable'], bestEffort: ['kubepods', 'besteffort'] };

t.test('pod cgroup names: Guaranteed directly under kubepods, the others under their QoS cgroup', async (t) => {
  const pcm = new PodContainerManager({ cgroupManager: new FakeCgroupManager(), qosContainersInfo: qos });
  t.same(pcm.getPodContainerName(guaranteedPod('g1')), { name: ['kubepods', 'podg1'], literal: '/kubepods/podg1' });
  t.same(pcm.getPodContainerName(burstablePod('b1')), { name: ['kubepods', 'burstable', 'podb1'], literal: '/kubepods/burstable/podb1' });
  t.same(pcm.getPodContainerName(bestEffortPod('e1')), { name: ['kubepods', 'besteffort', 'pode1'], literal: '/kubepods/besteffort/pode1' });
});

t.test('ensureExists creates the pod cgroup once with ResourceConfigForPod and --pod-max-pids', async (t) => {
  const cm = new FakeCgroupManager();
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, podPidsLimit: 1024 });
  const pod = guaranteedPod('g1', '1', '256Mi');
  t.notOk(await pcm.exists(pod));
  await pcm.ensureExists(pod);
  await pcm.ensureExists(pod);
  t.same(cm.created, [
    { name: ['kubepods', 'podg1'], resources: { cpuShares: 1024, cpuQuota: 100_000, cpuPeriod: 100_000, memoryLimitBytes: 256 * 2 ** 20, pidsLimit: 1024 } },
  ]);
  t.ok(await pcm.exists(pod));

  const noQuota = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, enforceCpuLimits: false, cpuCfsQuotaPeriodUs: 50_000 });
  await noQuota.ensureExists(guaranteedPod('g2', '1', '256Mi'));
  t.same(cm.created[1].resources, { cpuShares: 1024, cpuQuota: -1, cpuPeriod: 50_000, memoryLimitBytes: 256 * 2 ** 20 }, 'no pids limit by default (-1)');

  cm.errors.set('create', new Error('no space'));
  await t.rejects(pcm.ensureExists(bestEffortPod('e1')), { message: 'failed to create container for [kubepods besteffort pode1] : no space' });
});

t.test('destroy SIGKILLs what still runs in the pod cgroup tree, then removes it', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v1' });
  const clock = new FakeClock();
  const cm = new CgroupfsManager({ version: 'v1', fs, clock });
  const killed: number[] = [];
  const pcm = new PodContainerManager({
    cgroupManager: cm,
    qosContainersInfo: qos,
    killProcess: (pid) => {
      killed.push(pid);
      fs.removeProcess(pid);
    },
  });
  const pod = burstablePod('b1');
  await pcm.ensureExists(pod);
  const { name } = pcm.getPodContainerName(pod);
  await cm.create([...name, 'container1']);
  fs.addProcess(`${CG}/cpu/kubepods/burstable/podb1`, 100);
  fs.addProcess(`${CG}/memory/kubepods/burstable/podb1/container1`, 101);
  await pcm.destroy(name);
  t.same(killed, [100, 101]);
  t.notOk(fs.isDir(`${CG}/cpu/kubepods/burstable/podb1`));
  t.notOk(fs.isDir(`${CG}/memory/kubepods/burstable/podb1/container1`));
  t.ok(fs.isDir(`${CG}/memory/kubepods/burstable`), 'the QoS cgroup stays');
});

t.test('killing retries up to 5 passes over the pids it could not kill', async (t) => {
  const cm = new FakeCgroupManager();
  cm.seed(['kubepods', 'podx']);
  cm.procs.set('/kubepods/podx', [1, 2]);
  const attempts = new Map<number, number>();
  const flaky = new PodContainerManager({
    cgroupManager: cm,
    qosContainersInfo: qos,
    killProcess: (pid) => {
      attempts.set(pid, (attempts.get(pid) ?? 0) + 1);
      if (pid === 2 && attempts.get(pid)! < 3) throw new Error('operation not permitted');
    },
  });
  await flaky.destroy(['kubepods', 'podx']);
  t.same([...attempts], [[1, 1], [2, 3]], 'a killed pid is not killed again');
  t.same(cm.destroyed, [['kubepods', 'podx']]);

  cm.seed(['kubepods', 'pody']);
  cm.procs.set('/kubepods/pody', [7, 8]);
  let calls = 0;
  const stuck = new PodContainerManager({
    cgroupManager: cm,
    qosContainersInfo: qos,
    killProcess: (pid) => {
      calls++;
      throw new Error(`kill ${pid}: operation not permitted`);
    },
  });
  await t.rejects(stuck.destroy(['kubepods', 'pody']), {
    message: 'failed to kill all the processes attached to the [kubepods pody] cgroups : [kill 7: operation not permitted, kill 8: operation not permitted]',
  });
  t.equal(calls, 10, '5 passes over 2 pids');
  t.ok(await cm.exists(['kubepods', 'pody']), 'not removed');

  cm.procs.clear();
  cm.errors.set('destroy', new Error('Failed to remove paths: map[cpu:/x]'));
  await t.rejects(stuck.destroy(['kubepods', 'pody']), { message: 'failed to delete cgroup paths for [kubepods pody] : Failed to remove paths: map[cpu:/x]' });
});

t.test('reduceCpuLimits sets the minimum cpu shares', async (t) => {
  const cm = new FakeCgroupManager();
  cm.seed(['kubepods', 'podg'], { cpuShares: 1024, cpuQuota: 100_000 });
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos });
  await pcm.reduceCpuLimits(['kubepods', 'podg']);
  t.same(cm.updated, [{ name: ['kubepods', 'podg'], resources: { cpuShares: 2 } }]);
});

t.test('getAllPodsFromCgroups scans the QoS cgroups of every hierarchy; isPodCgroup', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v1' });
  const logger = new RecordingLogger();
  const cm = new CgroupfsManager({ version: 'v1', fs });
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, logger });
  for (const name of [['kubepods', 'burstable'], ['kubepods', 'besteffort'], ['kubepods', 'poda'], ['kubepods', 'burstable', 'podb']]) await cm.create(name);
  fs.mkdirp(`${CG}/memory/kubepods/besteffort/podc`); // only left in one hierarchy
  fs.mkdirp(`${CG}/cpu/kubepods/besteffort/podpodd`); // two prefixes: not a pod
  fs.mkdirp(`${CG}/cpu/kubepods/other`);
  const pods = await pcm.getAllPodsFromCgroups();
  t.same(Object.fromEntries(pods), { a: ['kubepods', 'poda'], b: ['kubepods', 'burstable', 'podb'], c: ['kubepods', 'besteffort', 'podc'] });
  t.ok(logger.entries.some((e) => e.msg === 'pod cgroup manager ignoring unexpected cgroup because it is not a pod'));

  t.same(pcm.isPodCgroup('/kubepods/burstable/pod123'), { isPod: true, uid: '123' });
  t.same(pcm.isPodCgroup('/kubepods/pod9'), { isPod: true, uid: '9' });
  t.same(pcm.isPodCgroup('/kubepods/burstable'), { isPod: false });
  t.same(pcm.isPodCgroup('/kubepods/burstable/pod123/ctr'), { isPod: false });
  t.same(pcm.isPodCgroup('/other/pod1'), { isPod: false });
  t.same(pcm.isPodCgroup('/'), { isPod: false });
});

t.test('NoopPodContainerManager: everything exists in the cgroup root, nothing is made', async (t) => {
  const noop = new NoopPodContainerManager(['custom']);
  t.same(noop.getPodContainerName(guaranteedPod('g')), { name: ['custom'], literal: '' });
  t.ok(await noop.exists(guaranteedPod('g')));
  await noop.ensureExists(guaranteedPod('g'));
  await noop.destroy(['x']);
  await noop.reduceCpuLimits(['x']);
  t.same([...(await noop.getAllPodsFromCgroups())], []);
  t.same(noop.isPodCgroup('/kubepods/pod1'), { isPod: false });
});

t.test('cleanupOrphanedPodCgroups: destroys orphans, reduces CPU while volumes remain, keeps running pods', async (t) => {
  const cm = new FakeCgroupManager();
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, killProcess: () => undefined });
  const names: Record<string, string[]> = { running: ['kubepods', 'podrunning'], orphan: ['kubepods', 'burstable', 'podorphan'], volumes: ['kubepods', 'besteffort', 'podvolumes'], broken: ['kubepods', 'podbroken'] };
  for (const name of Object.values(names)) cm.seed(name, { cpuShares: 500 });
  const logger = new RecordingLogger({ verbosity: 3 });
  const cgroupPods = await pcm.getAllPodsFromCgroups();
  t.same([...cgroupPods.keys()].sort(), ['broken', 'orphan', 'running', 'volumes']);
  const realDestroy = cm.destroy.bind(cm);
  cm.destroy = async (name) => {
    if (name.includes('podbroken')) throw new Error('busy');
    return realDestroy(name);
  };
  await cleanupOrphanedPodCgroups(pcm, cgroupPods, new Set(['running']), (uid) => uid === 'volumes', logger);
  t.same(cm.destroyed, [names.orphan]);
  t.same(cm.updated, [{ name: names.volumes, resources: { cpuShares: 2 } }]);
  t.same(cm.cgroups().filter((c) => c.includes('/pod')), ['/kubepods/besteffort/podvolumes', '/kubepods/podbroken', '/kubepods/podrunning']);
  t.ok(logger.entries.some((e) => e.msg === 'Failed to destroy orphaned pod cgroups' && String(e.kv.err).includes('busy')), 'a failure is logged, not thrown');
});

t.test('hybrid host: a deleted pod and an orphan left only in the unified hierarchy reach the destroy that removes it there', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v1', hybrid: true });
  const cm = new CgroupfsManager({ version: 'v1', fs, clock: new FakeClock() });
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, killProcess: () => undefined });
  for (const name of [['kubepods', 'burstable'], ['kubepods', 'besteffort']]) await cm.create(name);
  const deleted = bestEffortPod('deleted');
  await pcm.ensureExists(deleted);
  fs.mkdirp(`${CG}/unified/kubepods/besteffort/poddeleted/ctr`); // runc's container cgroup, its parents included
  await pcm.destroy(pcm.getPodContainerName(deleted).name);
  t.notOk(fs.isDir(`${CG}/unified/kubepods/besteffort/poddeleted`), 'the pod deletion path removes it');

  // A kubelet before the fix left pods' directories there; housekeeping's orphan cleanup finds and removes them.
  fs.mkdirp(`${CG}/unified/kubepods/burstable/podleaked`);
  fs.mkdirp(`${CG}/unified/kubepods/podleakedtoo/ctr`);
  await pcm.ensureExists(guaranteedPod('running'));
  fs.mkdirp(`${CG}/unified/kubepods/podrunning/ctr`);
  const cgroupPods = await pcm.getAllPodsFromCgroups();
  t.same([...cgroupPods.keys()].sort(), ['leaked', 'leakedtoo', 'running']);
  await cleanupOrphanedPodCgroups(pcm, cgroupPods, new Set(['running']), () => false);
  t.same(fs.dirsUnder(`${CG}/unified/kubepods`), [
    `${CG}/unified/kubepods/besteffort`,
    `${CG}/unified/kubepods/burstable`,
    `${CG}/unified/kubepods/podrunning`,
    `${CG}/unified/kubepods/podrunning/ctr`,
  ]);
});
