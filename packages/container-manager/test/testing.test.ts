import t from 'tap';
import { FakeCgroupFs, FakeCgroupManager } from '../src/testing.js';
import { CG } from './helpers.js';

t.test('FakeCgroupFs v1 behaves like the kernel where it matters', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v1', subsystems: ['cpu', 'memory'] });
  t.same(await fs.readdir(CG), ['cpu', 'memory']);
  await fs.mkdir(`${CG}/cpu/a`);
  await t.rejects(fs.mkdir(`${CG}/cpu/a`), { code: 'EEXIST' });
  await t.rejects(fs.mkdir(`${CG}/cpu/x/y`), { code: 'ENOENT' });
  t.equal(fs.read(`${CG}/cpu/a/cpu.shares`), '1024');
  t.equal(fs.read(`${CG}/cpu/a/cpu.cfs_quota_us`), '-1');
  await fs.writeFile(`${CG}/cpu/a/cpu.shares`, '1');
  t.equal(fs.read(`${CG}/cpu/a/cpu.shares`), '2', 'clamped like the kernel');
  await t.rejects(fs.writeFile(`${CG}/cpu/a/new-file`, 'x'), { code: 'EACCES' }, 'files cannot be created');
  await fs.mkdir(`${CG}/cpu/a/b`);
  await t.rejects(fs.rmdir(`${CG}/cpu/a`), { code: 'EBUSY' }, 'a cgroup with children');
  fs.addProcess(`${CG}/cpu/a/b`, 42);
  await t.rejects(fs.rmdir(`${CG}/cpu/a/b`), { code: 'EBUSY' }, 'a cgroup with processes');
  fs.removeProcess(42);
  await fs.rmdir(`${CG}/cpu/a/b`);
  fs.injectError('rmdir', `${CG}/cpu/a`, 'EBUSY', 1);
  await t.rejects(fs.rmdir(`${CG}/cpu/a`), { code: 'EBUSY', message: `EBUSY: resource busy or locked, rmdir '${CG}/cpu/a'` });
  await fs.rmdir(`${CG}/cpu/a`);
  t.notOk(await fs.exists(`${CG}/cpu/a/cpu.shares`), 'its files went with it');
  t.same(fs.writes, [{ path: `${CG}/cpu/a/cpu.shares`, data: '1' }]);
});

t.test('FakeCgroupFs v2: subtree_control decides the controllers and files of the children', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['cpu', 'memory', 'pids'] });
  await fs.mkdir(`${CG}/a`);
  t.equal(fs.read(`${CG}/a/cgroup.controllers`), '');
  t.notOk(await fs.exists(`${CG}/a/cpu.weight`));
  await fs.writeFile(`${CG}/cgroup.subtree_control`, '+cpu +memory');
  t.equal(fs.read(`${CG}/a/cgroup.controllers`), 'cpu memory');
  t.equal(fs.read(`${CG}/a/cpu.weight`), '100');
  t.equal(fs.read(`${CG}/a/memory.max`), 'max');
  await t.rejects(fs.writeFile(`${CG}/cgroup.subtree_control`, '+io'), { code: 'ENOENT' }, 'a controller the cgroup does not have');
  await fs.writeFile(`${CG}/cgroup.subtree_control`, '-memory');
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), 'cpu');
  t.notOk(await fs.exists(`${CG}/a/memory.max`));
});

t.test('FakeCgroupManager records what it is asked and can fail', async (t) => {
  const cm = new FakeCgroupManager('v2');
  t.equal(cm.version, 'v2');
  t.ok(await cm.exists([]), 'the root exists');
  await cm.create(['kubepods', 'pod1'], { cpuShares: 10 });
  await cm.update(['kubepods', 'pod1'], { memoryLimitBytes: 100 });
  t.same(cm.config(['kubepods', 'pod1']), { cpuShares: 10, memoryLimitBytes: 100 });
  t.same(await cm.listChildren(['kubepods']), ['pod1']);
  t.same(await cm.listChildren([]), ['kubepods']);
  cm.procs.set('/kubepods/pod1', [3, 1]);
  t.same(await cm.pids(['kubepods']), [1, 3]);
  cm.memoryUsage.set('/kubepods', 5);
  t.equal(await cm.memoryUsageBytes(['kubepods']), 5);
  await t.rejects(cm.update(['nope'], {}), { message: 'cgroup /nope does not exist' });
  cm.errors.set('destroy', new Error('EBUSY'));
  await t.rejects(cm.destroy(['kubepods']), { message: 'EBUSY' });
  await cm.destroy(['kubepods']);
  t.same(cm.cgroups(), ['/']);
  t.same(cm.created, [{ name: ['kubepods', 'pod1'], resources: { cpuShares: 10 } }]);
  t.same(cm.updated, [{ name: ['kubepods', 'pod1'], resources: { memoryLimitBytes: 100 } }]);
  t.same(cm.destroyed, [['kubepods']]);
});
