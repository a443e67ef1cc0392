// cgroup v2 without controllers, as the unified systemd node of tools/systemd-node/bare.sh has it (real-systemd.test.ts):
// the files of a missing controller are absent, so Update fails on the first one libcontainer's fs2 Set writes
// (pids, then memory, then cpu), and the systemd driver's error names the CgroupName as Go's does.
import t from 'tap';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { CgroupfsManager, SystemdCgroupManager } from '../src/index.js';
import { FakeCgroupFs, InMemorySystemdUnits } from '../src/testing.js';
import { CG } from './helpers.js';

const MiB = 2 ** 20;
const ALL = { cpuShares: 256, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * MiB, pidsLimit: 100 };

t.test('fs2 Set order: pids.max, memory.max, cpu.weight, cpu.max', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2' });
  const manager = new CgroupfsManager({ version: 'v2', fs });
  await manager.create(['kubepods', 'pod1']);
  const before = fs.writes.length;
  await manager.update(['kubepods', 'pod1'], ALL);
  t.same(
    fs.writes.slice(before).map((w) => w.path.slice(`${CG}/kubepods/pod1/`.length)).filter((f) => !f.includes('/')),
    ['pids.max', 'memory.max', 'cpu.weight', 'cpu.max'],
  );
});

t.test('no controllers: the update fails on pids.max first', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: [] });
  const manager = new CgroupfsManager({ version: 'v2', fs });
  await manager.create(['kubepods']);
  await t.rejects(manager.update(['kubepods'], ALL), {
    message: `failed to set resources for cgroup [kubepods]: failed to write "100" to "${CG}/kubepods/pids.max": EACCES: permission denied, open '${CG}/kubepods/pids.max'`,
  });
  await t.rejects(manager.update(['kubepods'], { cpuShares: 2, memoryLimitBytes: MiB }), { message: /failed to write "1048576" to ".*\/memory.max"/ });
});

t.test('the systemd driver: the v2 update error names the CgroupName, not the slice directories', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: [] });
  const units = new InMemorySystemdUnits();
  const logger = new RecordingLogger();
  const manager = new SystemdCgroupManager({ version: 'v2', units, fs, logger });
  const uid = '0a1b2c3d-4e5f-6789-abcd-ef0123456789';
  const pod = ['kubepods', 'burstable', `pod${uid}`];
  await manager.create(['kubepods']);
  await manager.create(['kubepods', 'burstable']);
  await manager.create(pod, ALL);
  const podDir = `${CG}/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice`;
  const expected = `failed to set resources for cgroup [kubepods burstable pod${uid}]: failed to write "100" to "${podDir}/pids.max": EACCES: permission denied, open '${podDir}/pids.max'`;
  const logged = logger.entries.filter((e) => e.msg === 'cgroup update failed');
  t.equal(logged.length, 1, 'create logs the failed update (the slices without resources write nothing)');
  t.equal((logged[0].err as Error).message, expected);
  await t.rejects(manager.update(pod, ALL), { message: expected });
  t.equal(units.calls.filter((c) => c.method === 'SetUnitProperties').at(-1)?.unit, 'kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice', 'SetUnitProperties came first');
});
