// CgroupfsManager and PodContainerManager on the kernel's cgroup v2 rules (FakeCgroupFs v2): cgroup.kill and
// cgroup.events for removal, memory.events for OOM kills, PSI, and the errors of enabling controllers.
import t from 'tap';
import { FakeClock } from '@kubelet-ts/core/testing';
import { CgroupfsManager, PodContainerManager } from '../src/index.js';
import { FakeCgroupFs, FakeCgroupManager } from '../src/testing.js';
import { CG } from './helpers.js';

function setup(opts: ConstructorParameters<typeof FakeCgroupFs>[0] = {}) {
  const fs = new FakeCgroupFs({ version: 'v2', ...opts });
  const clock = new FakeClock();
  const cm = new CgroupfsManager({ version: 'v2', fs, clock });
  return { fs, clock, cm };
}

t.test('killAllProcesses: cgroup.kill, then cgroup.events until populated 0', async (t) => {
  const { fs, clock, cm } = setup();
  await cm.create(['kubepods', 'pod1', 'c1']);
  await cm.create(['kubepods', 'pod1', 'c2']);
  fs.addProcess(`${CG}/kubepods/pod1/c1`, 10);
  fs.addProcess(`${CG}/kubepods/pod1/c2`, 11);
  fs.holdKilled = true;
  let done: boolean | undefined;
  const killing = cm.killAllProcesses(['kubepods', 'pod1']).then((r) => (done = r));
  await clock.advance(10);
  t.equal(done, undefined, 'still populated: it waits');
  t.same(fs.writesTo(/cgroup\.kill$/), [{ path: `${CG}/kubepods/pod1/cgroup.kill`, data: '1' }]);
  fs.releaseKilled();
  await clock.advance(20);
  await killing;
  t.equal(done, true);
  t.same(fs.killed, [10, 11]);
  await cm.destroy(['kubepods', 'pod1']);
  t.notOk(fs.isDir(`${CG}/kubepods/pod1`));
});

t.test('killAllProcesses: bounded like RemovePaths, false without cgroup.kill, false on v1', async (t) => {
  const { fs, clock, cm } = setup();
  await cm.create(['pod1', 'c1']);
  fs.addProcess(`${CG}/pod1/c1`, 10);
  fs.holdKilled = true;
  const stuck = t.rejects(cm.killAllProcesses(['pod1']), {
    message: `cgroup [pod1] still has processes after writing "1" to "${CG}/pod1/cgroup.kill": "${CG}/pod1/cgroup.events" says populated 1`,
  });
  await clock.advance(10 + 20 + 40 + 80);
  await stuck;
  const old = setup({ cgroupKill: false });
  await old.cm.create(['pod1']);
  t.equal(await old.cm.killAllProcesses(['pod1']), false, 'a kernel before 5.14');
  t.equal(await cm.killAllProcesses([]), false, 'the root has no cgroup.kill');
  const v1 = new CgroupfsManager({ version: 'v1', fs: new FakeCgroupFs({ version: 'v1' }) });
  t.equal(await v1.killAllProcesses(['pod1']), false);
});

t.test('destroy waits while cgroup.events says populated 1', async (t) => {
  const { fs, clock, cm } = setup();
  await cm.create(['pod1', 'c1']);
  fs.addProcess(`${CG}/pod1/c1`, 10);
  let done = false;
  const destroying = cm.destroy(['pod1']).then(() => (done = true));
  await clock.advance(10);
  t.notOk(done);
  t.ok(fs.isDir(`${CG}/pod1/c1`), 'no rmdir while populated');
  fs.removeProcess(10);
  await clock.advance(20);
  await destroying;
  t.notOk(fs.isDir(`${CG}/pod1`));
});

t.test('PodContainerManager.destroy kills through cgroup.kill on v2 and falls back to the pids on v1', async (t) => {
  const { fs, cm } = setup();
  const qos = { guaranteed: ['kubepods'], burstable: ['kubepods', 'burstable'], bestEffort: ['kubepods', 'besteffort'] };
  const signalled: number[] = [];
  const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, killProcess: (pid) => void signalled.push(pid) });
  await cm.create(['kubepods', 'poda', 'ctr']);
  fs.addProcess(`${CG}/kubepods/poda/ctr`, 42);
  await pcm.destroy(['kubepods', 'poda']);
  t.same(fs.killed, [42], 'cgroup.kill');
  t.same(signalled, [], 'no pid signalled one by one');
  t.notOk(fs.isDir(`${CG}/kubepods/poda`));

  const fake = new FakeCgroupManager('v1');
  fake.seed(['kubepods', 'podb']);
  fake.procs.set('/kubepods/podb', [7, 8]);
  const v1 = new PodContainerManager({ cgroupManager: fake, qosContainersInfo: qos, killProcess: (pid) => void signalled.push(pid) });
  await v1.destroy(['kubepods', 'podb']);
  t.same(signalled, [7, 8], 'killOnePid for each');
  t.same(fake.killedCgroups, []);

  const v2 = new FakeCgroupManager('v2');
  v2.seed(['kubepods', 'podc']);
  v2.procs.set('/kubepods/podc', [9]);
  await new PodContainerManager({ cgroupManager: v2, qosContainersInfo: qos, killProcess: (pid) => void signalled.push(pid) }).destroy(['kubepods', 'podc']);
  t.same(v2.killedCgroups, [['kubepods', 'podc']]);
  t.same(signalled, [7, 8]);
  v2.seed(['kubepods', 'podd']);
  v2.errors.set('killAllProcesses', new Error('boom'));
  await t.rejects(new PodContainerManager({ cgroupManager: v2, qosContainersInfo: qos }).destroy(['kubepods', 'podd']), {
    message: 'failed to kill all the processes attached to the [kubepods podd] cgroups : boom',
  });
});

t.test('memoryEvents: v2 memory.events, v1 memory.oom_control oom_kill', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['pod1', 'c1']);
  fs.addProcess(`${CG}/pod1/c1`, 5);
  t.same(await cm.memoryEvents(['pod1']), { oomKill: 0, low: 0, high: 0, max: 0, oom: 0, oomGroupKill: 0 });
  fs.simulateOomKill(`${CG}/pod1/c1`);
  t.same(await cm.memoryEvents(['pod1', 'c1']), { oomKill: 1, low: 0, high: 0, max: 1, oom: 1, oomGroupKill: 0 });
  t.equal((await cm.memoryEvents(['pod1']))?.oomKill, 1, 'counted up the tree');
  t.equal(await cm.memoryEvents(['gone']), undefined);
  const garbled = new CgroupfsManager({
    version: 'v2',
    fs: Object.assign(Object.create(fs) as FakeCgroupFs, { readFile: async () => 'low 0\noom_kill x\n' }),
  });
  await t.rejects(garbled.memoryEvents(['pod1']), { message: `unable to parse "oom_kill x" in "${CG}/pod1/memory.events": want "<key> <value>"` });
  const noMemory = setup({ controllers: ['cpu', 'pids'] });
  await noMemory.cm.create(['pod1']);
  t.equal(await noMemory.cm.memoryEvents(['pod1']), undefined, 'no memory controller');

  const v1fs = new FakeCgroupFs({ version: 'v1' });
  const v1 = new CgroupfsManager({ version: 'v1', fs: v1fs });
  await v1.create(['pod1']);
  v1fs.addProcess(`${CG}/memory/pod1`, 3);
  v1fs.simulateOomKill(`${CG}/memory/pod1`);
  t.same(await v1.memoryEvents(['pod1']), { oomKill: 1 });
  v1fs.setFile(`${CG}/memory/pod1/memory.oom_control`, 'oom_kill_disable 0\nunder_oom 0\n');
  t.equal(await v1.memoryEvents(['pod1']), undefined, 'a kernel before 4.13');
});

t.test('pressure: the PSI files of v2; none on v1 or without PSI', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['pod1']);
  fs.setFile(`${CG}/pod1/cpu.pressure`, 'some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7');
  const zero = { avg10: 0, avg60: 0, avg300: 0, total: 0 };
  t.same(await cm.pressure(['pod1']), {
    cpu: { some: { avg10: 1.5, avg60: 0.25, avg300: 0, total: 123456 }, full: { avg10: 0, avg60: 0, avg300: 0, total: 7 } },
    memory: { some: zero, full: zero },
    io: { some: zero, full: zero },
  });
  fs.setFile(`${CG}/pod1/io.pressure`, 'some avg10=x');
  await t.rejects(cm.pressure(['pod1']), { message: /unable to parse "some avg10=x" in ".*\/pod1\/io.pressure"/ });
  const noPsi = setup({ psi: false });
  await noPsi.cm.create(['pod1']);
  t.equal(await noPsi.cm.pressure(['pod1']), undefined);
  t.equal(await new CgroupfsManager({ version: 'v1', fs: new FakeCgroupFs() }).pressure(['pod1']), undefined);
});

t.test('create explains why the kernel refuses a controller', async (t) => {
  const { fs, cm } = setup({ controllers: ['cpu', 'memory', 'pids'] });
  fs.mkdirp(`${CG}/busy`);
  fs.addProcess(`${CG}/busy`, 77);
  await t.rejects(cm.create(['busy', 'child']), {
    code: 'EBUSY',
    message: `failed to enable controllers on "${CG}/busy": write "+memory" to "${CG}/busy/cgroup.subtree_control": EBUSY: resource busy or locked, write '${CG}/busy/cgroup.subtree_control' (the cgroup has processes of its own: 77; cgroup v2 allows no processes in a cgroup that enables controllers for its children)`,
  });
  t.notOk(fs.isDir(`${CG}/busy/child`), 'the child it made is removed');
  const limited = setup({ controllers: ['cpu', 'memory', 'pids'] });
  limited.fs.mkdirp(`${CG}/mid`);
  await limited.fs.writeFile(`${CG}/cgroup.subtree_control`, '+cpu');
  limited.fs.injectError('writeFile', `${CG}/cgroup.subtree_control`, 'EBUSY');
  await t.rejects(limited.cm.create(['mid', 'x']), { message: /write "\+cpu" to "\/sys\/fs\/cgroup\/mid\/cgroup.subtree_control": ENOENT: .* \(the cgroup's cgroup.controllers is "cpu": its parent does not enable cpu\)|write "\+memory"/ });
});
