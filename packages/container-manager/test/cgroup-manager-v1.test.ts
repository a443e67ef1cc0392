import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { CgroupfsManager, createCgroupManager, detectCgroupVersion, SYSTEMD_MANAGER_UNAVAILABLE, SystemdCgroupManager, type SystemdUnitManager } from '../src/index.js';
import { FakeCgroupFs } from '../src/testing.js';
import { CG } from './helpers.js';

function setup(subsystems?: string[]) {
  const fs = new FakeCgroupFs({ version: 'v1', subsystems, cpus: '0-7', mems: '0-1' });
  const clock = new FakeClock();
  const cm = new CgroupfsManager({ version: 'v1', fs, clock });
  return { fs, clock, cm };
}

t.test('createCgroupManager: detects the version; the systemd driver needs a connection to systemd', async (t) => {
  const v1 = new FakeCgroupFs({ version: 'v1' });
  const v2 = new FakeCgroupFs({ version: 'v2' });
  t.equal(await detectCgroupVersion(v1), 'v1');
  t.equal(await detectCgroupVersion(v2), 'v2');
  t.equal((await createCgroupManager({ driver: 'cgroupfs', fs: v1 })).version, 'v1');
  t.equal((await createCgroupManager({ driver: 'cgroupfs', fs: v2 })).version, 'v2');
  t.equal((await createCgroupManager({ driver: 'cgroupfs', fs: v2, version: 'v1' })).version, 'v1', 'explicit version wins');
  await t.rejects(createCgroupManager({ driver: 'systemd', fs: v1 }), { message: SYSTEMD_MANAGER_UNAVAILABLE });
  await t.rejects(createCgroupManager({ driver: 'openrc' as never, fs: v1 }), { message: 'invalid cgroup driver "openrc", valid drivers are "cgroupfs" and "systemd"' });
  const units: SystemdUnitManager = {
    startTransientUnit: async () => undefined,
    stopUnit: async () => undefined,
    setUnitProperties: async () => undefined,
    resetFailedUnit: async () => undefined,
    close: () => undefined,
  };
  const systemd = await createCgroupManager({ driver: 'systemd', fs: v2, systemdUnits: units });
  t.type(systemd, SystemdCgroupManager);
  t.equal(systemd.version, 'v2', 'the systemd driver detects the version too');
  t.equal(systemd.name(['kubepods', 'burstable']), '/kubepods.slice/kubepods-burstable.slice');
});

t.test('name is the cgroupfs literal', async (t) => {
  const { cm } = setup();
  t.equal(cm.name(['kubepods', 'burstable', 'pod123']), '/kubepods/burstable/pod123');
  t.equal(cm.name([]), '/');
});

t.test('create makes the directory in every mounted hierarchy and writes the limits per subsystem', async (t) => {
  const { fs, cm } = setup();
  t.equal(await cm.exists(['kubepods']), false);
  await cm.create(['kubepods', 'burstable'], { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 1 << 30, pidsLimit: 100 });
  for (const subsystem of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'freezer', 'systemd']) {
    t.ok(fs.isDir(`${CG}/${subsystem}/kubepods/burstable`), `${subsystem} has the cgroup`);
  }
  t.ok(await cm.exists(['kubepods', 'burstable']));
  t.ok(await cm.exists(['kubepods']), 'parents are created too');
  t.same(
    fs.writesTo(/\/(cpu|memory|pids)\//).map((w) => `${w.path.slice(CG.length)}=${w.data}`),
    [
      '/memory/kubepods/burstable/memory.limit_in_bytes=1073741824',
      '/cpu/kubepods/burstable/cpu.shares=512',
      '/cpu/kubepods/burstable/cpu.cfs_period_us=100000',
      '/cpu/kubepods/burstable/cpu.cfs_quota_us=50000',
      '/pids/kubepods/burstable/pids.max=100',
    ],
  );
  t.equal(fs.read(`${CG}/memory/kubepods/burstable/memory.limit_in_bytes`), '1073741824');
  t.equal(fs.read(`${CG}/memory/kubepods/memory.limit_in_bytes`), '9223372036854771712', 'the parent keeps its limits');
});

t.test('cpuset: an empty cpuset.cpus/cpuset.mems is copied from the parent, as libcontainer does', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods', 'besteffort'], { cpuShares: 2 });
  t.equal(fs.read(`${CG}/cpuset/kubepods/cpuset.cpus`), '0-7');
  t.equal(fs.read(`${CG}/cpuset/kubepods/cpuset.mems`), '0-1');
  t.equal(fs.read(`${CG}/cpuset/kubepods/besteffort/cpuset.cpus`), '0-7');
  fs.setFile(`${CG}/cpuset/kubepods/cpuset.cpus`, '2-3');
  await cm.create(['kubepods', 'burstable']);
  t.equal(fs.read(`${CG}/cpuset/kubepods/burstable/cpuset.cpus`), '2-3', 'copied from its own parent');
  t.equal(fs.read(`${CG}/cpuset/kubepods/cpuset.cpus`), '2-3', 'a set value is not overwritten');
});

t.test('unlimited values: quota -1, memory -1, pids max; absent fields are not written', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['a']);
  t.same(fs.writesTo(/\/(cpu|memory|pids)\//), [], 'create without resources writes no limits');
  await cm.update(['a'], { cpuQuota: -1, cpuPeriod: 100_000, memoryLimitBytes: -1, pidsLimit: -1 });
  t.equal(fs.read(`${CG}/cpu/a/cpu.cfs_quota_us`), '-1');
  t.equal(fs.read(`${CG}/memory/a/memory.limit_in_bytes`), '-1');
  t.equal(fs.read(`${CG}/pids/a/pids.max`), 'max');
});

t.test('cpu.shares is read back like libcontainer', async (t) => {
  const { cm } = setup();
  await cm.create(['a']);
  await t.rejects(cm.update(['a'], { cpuShares: 300_000 }), {
    message: 'failed to set config for supported subsystems : the maximum allowed cpu-shares is 262144',
  });
  await t.rejects(cm.update(['a'], { cpuShares: 1 }), { message: 'failed to set config for supported subsystems : the minimum allowed cpu-shares is 2' });
});

t.test('update errors: a write failure, a missing required subsystem; create only logs a failing update', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['a']);
  fs.injectError('writeFile', `${CG}/memory/a/memory.limit_in_bytes`, 'EBUSY');
  await t.rejects(cm.update(['a'], { memoryLimitBytes: 10 }), {
    message: `failed to set config for supported subsystems : failed to write "10" to "${CG}/memory/a/memory.limit_in_bytes": EBUSY: resource busy or locked, open '${CG}/memory/a/memory.limit_in_bytes'`,
  });
  await cm.create(['a'], { memoryLimitBytes: 10 }); // Go: Create logs "cgroup update failed" and succeeds
  t.ok(await cm.exists(['a']));

  const noPids = setup(['cpu', 'cpuacct', 'cpuset', 'memory']);
  await noPids.cm.create(['b']);
  await t.rejects(noPids.cm.update(['b'], { cpuShares: 2 }), { message: 'failed to find subsystem mount for required subsystem: pids' });
});

t.test('exists needs the cgroup in every whitelisted hierarchy that is mounted', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods']);
  t.ok(await cm.exists(['kubepods']));
  t.ok(await cm.exists([]), 'the root exists');
  await fs.rmdir(`${CG}/pids/kubepods`);
  t.notOk(await cm.exists(['kubepods']), 'missing in pids');
  fs.mkdirp(`${CG}/pids/kubepods`);
  await fs.rmdir(`${CG}/blkio/kubepods`);
  t.ok(await cm.exists(['kubepods']), 'blkio is not checked (Go whitelists cpu, cpuacct, cpuset, memory, systemd, pids, hugetlb)');
});

t.test('destroy removes children first in every hierarchy', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods', 'burstable', 'pod1', 'container-a']);
  await cm.create(['kubepods', 'burstable', 'pod2']);
  await cm.destroy(['kubepods', 'burstable', 'pod1']);
  t.same(fs.dirsUnder(`${CG}/cpu/kubepods/burstable`), [`${CG}/cpu/kubepods/burstable/pod2`]);
  t.same(fs.dirsUnder(`${CG}/memory/kubepods/burstable`), [`${CG}/memory/kubepods/burstable/pod2`]);
  t.notOk(await cm.exists(['kubepods', 'burstable', 'pod1']));
  await cm.destroy(['kubepods', 'burstable', 'pod1']); // already gone: fine
});

t.test('destroy retries an EBUSY rmdir like RemovePaths (10 ms, doubling) and reports what is left', async (t) => {
  const { fs, clock, cm } = setup();
  await cm.create(['pod1']);
  fs.injectError('rmdir', `${CG}/memory/pod1`, 'EBUSY', 2);
  const done = cm.destroy(['pod1']);
  await clock.advance(10 + 20);
  await done;
  t.notOk(fs.isDir(`${CG}/memory/pod1`), 'removed on the third pass');

  await cm.create(['pod2']);
  fs.injectError('rmdir', /\/(memory|pids)\/pod2$/, 'EBUSY');
  const failing = cm.destroy(['pod2']);
  const result = t.rejects(failing, {
    message: `unable to destroy cgroup paths for cgroup [pod2] : Failed to remove paths: map[memory:${CG}/memory/pod2 pids:${CG}/pids/pod2]`,
  });
  await clock.advance(10 + 20 + 40 + 80);
  await result;
  t.notOk(fs.isDir(`${CG}/cpu/pod2`), 'the other hierarchies were cleaned up');
});

t.test('pids are collected recursively from every hierarchy, sorted and unique', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods', 'pod1', 'c1']);
  fs.addProcess(`${CG}/cpu/kubepods/pod1`, 30);
  fs.addProcess(`${CG}/cpu/kubepods/pod1/c1`, 12);
  fs.addProcess(`${CG}/memory/kubepods/pod1/c1`, 12);
  fs.addProcess(`${CG}/memory/kubepods/pod1/c1`, 7);
  t.same(await cm.pids(['kubepods', 'pod1']), [7, 12, 30]);
  t.same(await cm.pids(['nope']), []);
});

t.test('memoryUsageBytes reads memory.usage_in_bytes; listChildren finds child cgroups in any hierarchy', async (t) => {
  const { fs, cm } = setup();
  await cm.create(['kubepods', 'burstable']);
  fs.setFile(`${CG}/memory/kubepods/memory.usage_in_bytes`, '4096');
  t.equal(await cm.memoryUsageBytes(['kubepods']), 4096);
  fs.mkdirp(`${CG}/cpu/kubepods/podonlyincpu`);
  t.same(await cm.listChildren(['kubepods']), ['burstable', 'podonlyincpu']);
  t.same(await cm.listChildren(['missing']), []);
  const noMemory = setup(['cpu', 'pids']);
  await t.rejects(noMemory.cm.memoryUsageBytes(['x']), { message: 'no cgroup v1 mountpoint for memory controller found' });
});

t.test('a co-mounted cpu,cpuacct hierarchy serves both subsystems', async (t) => {
  const { fs, cm } = setup(['cpu,cpuacct', 'cpuset', 'memory', 'pids']);
  await cm.create(['kubepods'], { cpuShares: 1024 });
  t.equal(fs.read(`${CG}/cpu,cpuacct/kubepods/cpu.shares`), '1024');
  t.ok(await cm.exists(['kubepods']));
  await cm.destroy(['kubepods']);
  t.notOk(fs.isDir(`${CG}/cpu,cpuacct/kubepods`));
});

// A hybrid host: v1 hierarchies and a cgroup2 one at /sys/fs/cgroup/unified, where runc (1.0+) makes every
// container's cgroup too (mkdir -p of the pod's directory and its parents) and removes only its leaf on exit.
function hybridSetup() {
  const fs = new FakeCgroupFs({ version: 'v1', hybrid: true });
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const cm = new CgroupfsManager({ version: 'v1', fs, clock, logger });
  const runcMkdir = (literal: string) => fs.mkdirp(`${CG}/unified${literal}`);
  return { fs, clock, logger, cm, runcMkdir };
}

t.test('hybrid host: the unified mount is found (a unified dir with cgroup.controllers), not on a plain v1 host nor v2', async (t) => {
  t.equal(await hybridSetup().cm.hybridUnifiedMount(), `${CG}/unified`);
  t.equal(await setup().cm.hybridUnifiedMount(), undefined);
  const notCgroup2 = new FakeCgroupFs({ version: 'v1', subsystems: ['cpu', 'memory', 'pids', 'unified'] });
  t.equal(await new CgroupfsManager({ version: 'v1', fs: notCgroup2 }).hybridUnifiedMount(), undefined, 'a v1 hierarchy named unified is not it');
  const v2 = new FakeCgroupFs({ version: 'v2' });
  t.equal(await new CgroupfsManager({ version: 'v2', fs: v2 }).hybridUnifiedMount(), undefined);
});

t.test('hybrid host: destroy removes the pod cgroup runc left in the unified hierarchy, deepest first', async (t) => {
  const { fs, cm, runcMkdir, logger } = hybridSetup();
  const pod = ['kubepods', 'besteffort', 'pod1'];
  await cm.create(pod);
  await cm.create(['kubepods', 'besteffort', 'pod2']);
  t.notOk(fs.isDir(`${CG}/unified/kubepods`), 'create leaves the unified hierarchy to runc (Go v1.20 does not make it)');
  runcMkdir('/kubepods/besteffort/pod1/ctr-a');
  runcMkdir('/kubepods/besteffort/pod1/ctr-b');
  runcMkdir('/kubepods/besteffort/pod2/ctr-c');
  await cm.destroy(pod);
  t.same(fs.dirsUnder(`${CG}/unified`), [`${CG}/unified/kubepods`, `${CG}/unified/kubepods/besteffort`, `${CG}/unified/kubepods/besteffort/pod2`, `${CG}/unified/kubepods/besteffort/pod2/ctr-c`]);
  t.notOk(fs.isDir(`${CG}/cpu/kubepods/besteffort/pod1`), 'the v1 cgroup is gone too');
  t.same(logger.lines(), [], 'nothing to report');

  // A pod whose containers never ran has no directory in the unified hierarchy: fine.
  await cm.destroy(['kubepods', 'besteffort', 'pod2']);
  await cm.create(['kubepods', 'besteffort', 'pod3']);
  await cm.destroy(['kubepods', 'besteffort', 'pod3']);
  t.same(fs.dirsUnder(`${CG}/unified/kubepods/besteffort`), []);
  t.same(logger.lines(), []);
  await cm.destroy([]).catch(() => undefined);
  t.ok(fs.isDir(`${CG}/unified/kubepods`), "destroying the root never touches the unified hierarchy's cgroups");
});

t.test('hybrid host: a failure in the unified hierarchy is retried, then logged, and never fails the destroy of the v1 cgroup', async (t) => {
  const { fs, clock, cm, runcMkdir, logger } = hybridSetup();
  await cm.create(['kubepods', 'pod1']);
  runcMkdir('/kubepods/pod1/ctr');
  fs.addProcess(`${CG}/unified/kubepods/pod1/ctr`, 42); // a process runc's leaf still holds
  const done = cm.destroy(['kubepods', 'pod1']);
  await clock.advance(10 + 20 + 40 + 80);
  await done;
  t.notOk(fs.isDir(`${CG}/memory/kubepods/pod1`), 'the v1 cgroup is removed');
  t.ok(fs.isDir(`${CG}/unified/kubepods/pod1/ctr`), 'the populated leaf stays (the kernel refuses its rmdir)');
  t.equal(logger.entries.length, 1);
  t.match(logger.entries[0], {
    level: 'warn',
    msg: 'Failed to remove the cgroup in the unified hierarchy of a hybrid cgroup host',
    kv: { cgroupName: '[kubepods pod1]', path: `${CG}/unified/kubepods/pod1`, err: /EBUSY/ },
  });

  // Once the process is gone, the next destroy (housekeeping finds the pod in listChildren) removes it.
  t.same(await cm.listChildren(['kubepods']), ['pod1'], 'a pod left only in the unified hierarchy is listed');
  fs.removeProcess(42);
  await cm.destroy(['kubepods', 'pod1']);
  t.same(await cm.listChildren(['kubepods']), []);
  t.same(fs.dirsUnder(`${CG}/unified/kubepods`), []);

  // A v1 failure still fails the destroy with Go's message, which names the v1 paths only.
  await cm.create(['kubepods', 'pod2']);
  runcMkdir('/kubepods/pod2/ctr');
  fs.injectError('rmdir', /\/(memory|unified)\/kubepods\/pod2$/, 'EBUSY');
  const failing = cm.destroy(['kubepods', 'pod2']);
  const result = t.rejects(failing, { message: `unable to destroy cgroup paths for cgroup [kubepods pod2] : Failed to remove paths: map[memory:${CG}/memory/kubepods/pod2]` });
  await clock.advance(10 + 20 + 40 + 80);
  await result;
  t.notOk(fs.isDir(`${CG}/unified/kubepods/pod2/ctr`), 'children were removed in the unified hierarchy');
});
