// The systemd driver through the real D-Bus client (SystemdDbusUnitManager) against FakeSystemdManager on a
// private dbus-daemon: the container manager's whole job, with the slices systemd makes on a fake cgroup tree.
import t from 'tap';
import { FakeClock, RecordingLogger, startPrivateBus } from '@kubelet-ts/core/testing';
import { cleanupOrphanedPodCgroups, ContainerManager, SystemdCgroupManager, SystemdDbusUnitManager } from '../src/index.js';
import { FakeCgroupFs, FakeSystemdManager } from '../src/testing.js';
import { burstablePod, CG, guaranteedPod } from './helpers.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;

for (const version of ['v1', 'v2'] as const) {
  t.test(`systemd driver over D-Bus (${version}): QoS slices, a pod slice, the orphan cleanup`, async (t) => {
    const bus = await startPrivateBus(t);
    const fs = new FakeCgroupFs({ version });
    const systemd = await FakeSystemdManager.start(bus.address, { fs, version, mountRoot: CG });
    t.teardown(() => systemd.close());
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const units = new SystemdDbusUnitManager({ address: bus.address, logger });
    t.teardown(() => units.close());
    const cgroupManager = new SystemdCgroupManager({ version, units, fs, clock, logger });
    const killed: number[] = [];
    const cm = new ContainerManager({
      capacity: { milliCpu: 2000, memoryBytes: 4 * GiB, pids: 4096 },
      systemReserved: { memory: '1Gi' },
      cgroupDriver: 'systemd',
      cgroupManager,
      clock,
      logger,
      killProcess: (pid) => {
        killed.push(pid);
        fs.removeProcess(pid);
      },
    });
    await cm.start(() => [burstablePod('b1', '500m')]);

    for (const slice of ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice']) t.equal(systemd.unit(slice)?.state, 'active', slice);
    const kubepods = systemd.unit('kubepods.slice')!;
    t.same(kubepods.properties.get('Wants'), { signature: 'as', value: ['-.slice'] });
    t.same(kubepods.properties.get(version === 'v1' ? 'MemoryLimit' : 'MemoryMax'), { signature: 't', value: BigInt(3 * GiB) }, 'node allocatable as a unit property');
    t.same(systemd.unit('kubepods-besteffort.slice')!.properties.get(version === 'v1' ? 'CPUShares' : 'CPUWeight'), { signature: 't', value: version === 'v1' ? 2n : 1n });
    t.same(systemd.realizeErrors, [], 'systemd made every slice without error');
    const memoryFile = version === 'v1' ? `${CG}/memory/kubepods.slice/memory.limit_in_bytes` : `${CG}/kubepods.slice/memory.max`;
    t.equal(fs.read(memoryFile), String(3 * GiB));

    const uid = '0a1b2c3d-4e5f-6789-abcd-ef0123456789';
    const pod = guaranteedPod(uid, '250m', '64Mi');
    const pcm = cm.newPodContainerManager();
    await pcm.ensureExists(pod);
    const podUnit = 'kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice';
    t.equal(cm.podCgroupParent(pod), `/kubepods.slice/${podUnit}`);
    t.equal(systemd.unit(podUnit)?.state, 'active');
    t.same(systemd.unit(podUnit)!.properties.get('CPUQuotaPerSecUSec'), { signature: 't', value: 250000n });
    const podDir = version === 'v1' ? `${CG}/cpu/kubepods.slice/${podUnit}` : `${CG}/kubepods.slice/${podUnit}`;
    t.equal(fs.read(`${podDir}/${version === 'v1' ? 'cpu.cfs_quota_us' : 'cpu.max'}`), version === 'v1' ? '25000' : '25000 100000');
    const memDir = version === 'v1' ? `${CG}/memory/kubepods.slice/${podUnit}` : podDir;
    t.equal(fs.read(`${memDir}/${version === 'v1' ? 'memory.limit_in_bytes' : 'memory.max'}`), String(64 * MiB));

    // A kubelet restart: the slice is found again from the directories, with the uid's dashes.
    const found = await pcm.getAllPodsFromCgroups();
    t.same([...found], [[uid, ['kubepods', `pod${uid}`]]]);
    const leaf = `${memDir}/cri-containerd-0123.scope`;
    fs.mkdirp(leaf);
    fs.addProcess(leaf, 777);
    await cleanupOrphanedPodCgroups(pcm, found, new Set(), () => false);
    if (version === 'v1') t.same(killed, [777]);
    t.equal(systemd.unit(podUnit), undefined, 'the unit was stopped and collected');
    t.same(
      systemd.callsOf('StopUnit').map((c) => c.args[0]),
      [podUnit],
    );
    t.notOk(fs.isDir(podDir));
    t.notOk(fs.isDir(memDir));
    t.same([...(await pcm.getAllPodsFromCgroups())], []);

    // The periodic QoS update goes through SetUnitProperties too.
    const before = systemd.callsOf('SetUnitProperties').length;
    await cm.updateQOSCgroups();
    t.ok(systemd.callsOf('SetUnitProperties').length >= before + 3, 'kubepods, burstable and besteffort updated through systemd');
    await cm.stop();
  });
}

t.test('systemd driver over D-Bus: a start job that fails resets the failed unit and names it', async (t) => {
  const bus = await startPrivateBus(t);
  const fs = new FakeCgroupFs({ version: 'v1' });
  const systemd = await FakeSystemdManager.start(bus.address, { fs, version: 'v1', mountRoot: CG });
  t.teardown(() => systemd.close());
  const units = new SystemdDbusUnitManager({ address: bus.address });
  t.teardown(() => units.close());
  const manager = new SystemdCgroupManager({ version: 'v1', units, fs, clock: new FakeClock(), logger: new RecordingLogger() });
  systemd.failNextJob('failed');
  await t.rejects(manager.create(['kubepods'], {}), { message: /kubepods\.slice/ });
  t.same(
    systemd.callsOf('ResetFailedUnit').map((c) => c.args[0]),
    ['kubepods.slice'],
  );
  t.equal(systemd.unit('kubepods.slice'), undefined, 'the failed unit was reset');
  // Created again, as the next sync would.
  await manager.create(['kubepods'], {});
  t.equal(systemd.unit('kubepods.slice')?.state, 'active');
  // An existing unit is fine: creating it again only updates it.
  await manager.create(['kubepods'], { cpuShares: 1024 });
  t.same(systemd.unit('kubepods.slice')!.properties.get('CPUShares'), { signature: 't', value: 1024n });
});
