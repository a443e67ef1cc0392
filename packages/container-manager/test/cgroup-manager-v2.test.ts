import t from 'tap';
import { FakeClock } from '@kubelet-ts/core/testing';
import { CgroupfsManager } from '../src/index.js';
import { FakeCgroupFs } from '../src/testing.js';
import { CG } from './helpers.js';

function setup(controllers?: string[]) {
  const fs = new FakeCgroupFs({ version: 'v2', controllers });
  const clock = new FakeClock();
  const cm = new CgroupfsManager({ version: 'v2', fs, clock });
  return { fs, clock, cm };
}

t.test('create: one tree, controllers enabled in every ancestor\'s cgroup.subtree_control', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods', 'burstable'], { cpuShares: 1024, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 1 << 30, pidsLimit: 100 });
  t.ok(fs.isDir(`${CG}/kubepods/burstable`));
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), 'cpuset cpu memory hugetlb pids', 'the supported controllers the root has (not io, rdma)');
  t.equal(fs.read(`${CG}/kubepods/cgroup.subtree_control`), 'cpuset cpu memory hugetlb pids');
  t.equal(fs.read(`${CG}/kubepods/burstable/cgroup.subtree_control`), '', 'not in the leaf');
  t.equal(fs.read(`${CG}/kubepods/burstable/cpu.weight`), '39', 'cpu.shares 1024 -> weight 39');
  t.equal(fs.read(`${CG}/kubepods/burstable/cpu.max`), '50000 100000');
  t.equal(fs.read(`${CG}/kubepods/burstable/memory.max`), '1073741824');
  t.equal(fs.read(`${CG}/kubepods/burstable/pids.max`), '100');
  t.same(
    fs.writesTo(`${CG}/kubepods/burstable/`).map((w) => `${w.path.slice(CG.length)}=${w.data}`),
    // libcontainer fs2 Set's order: pids, memory, cpu
    ['/kubepods/burstable/pids.max=100', '/kubepods/burstable/memory.max=1073741824', '/kubepods/burstable/cpu.weight=39', '/kubepods/burstable/cpu.max=50000 100000'],
  );
  t.ok(await cm.exists(['kubepods', 'burstable']));
});

t.test('unlimited: cpu.max "max <period>", memory.max and pids.max "max"', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['pod1'], { cpuShares: 2, cpuQuota: -1, cpuPeriod: 100_000, memoryLimitBytes: -1, pidsLimit: -1 });
  t.equal(fs.read(`${CG}/pod1/cpu.weight`), '1');
  t.equal(fs.read(`${CG}/pod1/cpu.max`), 'max 100000');
  t.equal(fs.read(`${CG}/pod1/memory.max`), 'max');
  t.equal(fs.read(`${CG}/pod1/pids.max`), 'max');
  await cm.update(['pod1'], { cpuPeriod: 50_000 });
  t.equal(fs.read(`${CG}/pod1/cpu.max`), 'max 50000', 'a period alone keeps no quota');
});

t.test('exists needs the supported controllers enabled for the cgroup', async (t) => {
  const { fs, cm } = setup();
  t.notOk(await cm.exists(['kubepods']));
  fs.mkdirp(`${CG}/kubepods`);
  t.notOk(await cm.exists(['kubepods']), 'a directory without cpu/memory/pids controllers is not enough');
  await cm.create(['kubepods']);
  t.ok(await cm.exists(['kubepods']));
  const few = setup(['cpu', 'memory']);
  await few.cm.create(['x']);
  t.equal(few.fs.read(`${CG}/cgroup.subtree_control`), 'cpu memory');
  t.ok(await few.cm.exists(['x']), 'only the controllers the root offers are needed');
});

t.test('a controller the parent cannot enable fails with Go\'s message, and a failed create leaves nothing behind', async (t) => {
  const { fs, cm } = setup();
  fs.injectError('writeFile', `${CG}/kubepods/cgroup.subtree_control`, 'EBUSY');
  await t.rejects(cm.create(['kubepods', 'pod1']), {
    message: `failed to enable controllers on "${CG}/kubepods": write "+cpu" to "${CG}/kubepods/cgroup.subtree_control": EBUSY: resource busy or locked, open '${CG}/kubepods/cgroup.subtree_control'`,
    code: 'EBUSY',
  });
  t.notOk(fs.isDir(`${CG}/kubepods`), 'the directories it made are removed');
  fs.clearErrors();
  fs.injectError('writeFile', `${CG}/cgroup.subtree_control`, 'EINVAL', 1);
  await cm.create(['kubepods']);
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), 'cpuset cpu memory hugetlb pids', 'retried one controller at a time');
  fs.injectError('writeFile', `${CG}/kubepods/memory.max`, 'EBUSY', 1);
  await t.rejects(cm.update(['kubepods'], { memoryLimitBytes: 100 }), {
    message: `failed to set resources for cgroup [kubepods]: failed to write "100" to "${CG}/kubepods/memory.max": EBUSY: resource busy or locked, open '${CG}/kubepods/memory.max'`,
  });
});

t.test('destroy removes the subtree children first; pids and memory.current', async (t) => {
  const { fs, clock, cm } = setup();
  await cm.create(['kubepods', 'pod1', 'c1']);
  await cm.create(['kubepods', 'pod1', 'c2']);
  t.throws(() => fs.addProcess(`${CG}/kubepods/pod1`, 5), { code: 'EBUSY' }, 'no process in a cgroup that enables controllers for its children');
  fs.addProcess(`${CG}/kubepods/pod1/c2`, 5);
  fs.addProcess(`${CG}/kubepods/pod1/c1`, 3);
  t.same(await cm.pids(['kubepods', 'pod1']), [3, 5]);
  fs.setFile(`${CG}/kubepods/memory.current`, '8192');
  t.equal(await cm.memoryUsageBytes(['kubepods']), 8192);
  t.same(await cm.listChildren(['kubepods']), ['pod1']);

  const busy = cm.destroy(['kubepods', 'pod1']);
  const rejected = t.rejects(busy, {
    message: `unable to destroy cgroup paths for cgroup [kubepods pod1] : "${CG}/kubepods/pod1/cgroup.events" says populated 1: processes are still in the cgroup or below it`,
  });
  await clock.advance(200);
  await rejected;
  fs.removeProcess(3);
  fs.removeProcess(5);
  await cm.destroy(['kubepods', 'pod1']);
  t.notOk(fs.isDir(`${CG}/kubepods/pod1`));
  t.ok(fs.isDir(`${CG}/kubepods`));
});
