// SystemdDbusUnitManager (the real D-Bus client) against FakeSystemdManager on a private dbus-daemon: transient
// slices, the wait for JobRemoved, failed and timed-out jobs, systemd's errors, reconnecting, and what the fake's
// cgroup tree looks like afterwards. The real systemd is exercised by tools/systemd-node's e2e, not here.
import t, { type Test } from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { mkdir, readdir, rmdir, writeFile, access } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pollUntil } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger, startPrivateBus } from '@kubelet-ts/core/testing';
import { encodeUnitProperty, SystemdDbusUnitManager, type SystemdDbusUnitManagerOptions } from '../src/systemd-dbus.js';
import { SYSTEMD_NO_SUCH_UNIT, SYSTEMD_UNIT_EXISTS, SystemdError, type UnitProperty } from '../src/systemd-units.js';
import { FakeCgroupFs, FakeSystemdManager, type FakeSystemdFs } from '../src/testing.js';

const MAX = 2n ** 64n - 1n;
const ROOT = '/sys/fs/cgroup';

async function setup(t: Test, version: 'v1' | 'v2', options: SystemdDbusUnitManagerOptions = {}) {
  const bus = await startPrivateBus(t, { prefix: 'kts-systemd-dbus-' });
  const fs = new FakeCgroupFs({ version, root: ROOT });
  const fake = await FakeSystemdManager.start(bus.address, { fs, version, mountRoot: ROOT });
  const logger = new RecordingLogger();
  const manager = new SystemdDbusUnitManager({ address: bus.address, logger, ...options });
  t.teardown(async () => {
    manager.close();
    await fake.close();
  });
  return { bus, fs, fake, manager, logger };
}

function sliceProps(parent: string, extra: UnitProperty[] = []): UnitProperty[] {
  return [
    { name: 'Description', signature: 's', value: 'libcontainer container x' },
    { name: 'Wants', signature: 'as', value: [parent] },
    { name: 'MemoryAccounting', signature: 'b', value: true },
    { name: 'CPUAccounting', signature: 'b', value: true },
    { name: 'DefaultDependencies', signature: 'b', value: false },
    ...extra,
  ];
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

t.test('v1: StartTransientUnit makes the slice in every hierarchy with systemd\'s files; the properties arrive with their signatures', async (t) => {
  const { fs, fake, manager } = await setup(t, 'v1');
  await manager.startTransientUnit(
    'kubepods.slice',
    sliceProps('-.slice', [
      { name: 'BlockIOAccounting', signature: 'b', value: true },
      { name: 'DevicePolicy', signature: 's', value: 'auto' },
      { name: 'DeviceAllow', signature: 'a(ss)', value: [] },
      { name: 'MemoryLimit', signature: 't', value: 1_073_741_824n },
      { name: 'CPUShares', signature: 't', value: 2048n },
      { name: 'CPUQuotaPerSecUSec', signature: 't', value: 1_500_000n },
      { name: 'TasksAccounting', signature: 'b', value: true },
      { name: 'TasksMax', signature: 't', value: MAX },
    ]),
  );
  const [start] = fake.callsOf('StartTransientUnit');
  t.equal(start.signature, 'ssa(sv)a(sa(sv))');
  t.same(start.args, [
    'kubepods.slice',
    'replace',
    [
      ['Description', { signature: 's', value: 'libcontainer container x' }],
      ['Wants', { signature: 'as', value: ['-.slice'] }],
      ['MemoryAccounting', { signature: 'b', value: true }],
      ['CPUAccounting', { signature: 'b', value: true }],
      ['DefaultDependencies', { signature: 'b', value: false }],
      ['BlockIOAccounting', { signature: 'b', value: true }],
      ['DevicePolicy', { signature: 's', value: 'auto' }],
      ['DeviceAllow', { signature: 'a(ss)', value: [] }],
      ['MemoryLimit', { signature: 't', value: 1_073_741_824n }],
      ['CPUShares', { signature: 't', value: 2048n }],
      ['CPUQuotaPerSecUSec', { signature: 't', value: 1_500_000n }],
      ['TasksAccounting', { signature: 'b', value: true }],
      ['TasksMax', { signature: 't', value: MAX }],
    ],
    [],
  ], 'the bytes decode to the same names, signatures and values (uint64 max intact)');
  t.same(fake.callsOf('Subscribe').length, 1, 'subscribed before the first job');
  t.match(fake.unit('kubepods.slice'), { state: 'active', implicit: false });
  for (const c of ['cpu', 'cpuacct', 'memory', 'pids', 'blkio']) t.ok(await fs.exists(`${ROOT}/${c}/kubepods.slice`), `${c}/kubepods.slice`);
  t.equal((await fs.readFile(`${ROOT}/cpu/kubepods.slice/cpu.shares`)).trim(), '2048');
  t.equal((await fs.readFile(`${ROOT}/cpu/kubepods.slice/cpu.cfs_period_us`)).trim(), '100000');
  t.equal((await fs.readFile(`${ROOT}/cpu/kubepods.slice/cpu.cfs_quota_us`)).trim(), '150000', 'quota = perSec * period / 1e6');
  t.equal((await fs.readFile(`${ROOT}/memory/kubepods.slice/memory.limit_in_bytes`)).trim(), '1073741824');
  t.equal((await fs.readFile(`${ROOT}/pids/kubepods.slice/pids.max`)).trim(), 'max', 'TasksMax=infinity');

  // A pod slice two levels down: systemd starts the missing parent slice itself.
  await manager.startTransientUnit('kubepods-burstable-pod1234.slice', sliceProps('kubepods-burstable.slice'));
  t.match(fake.unit('kubepods-burstable.slice'), { state: 'active', implicit: true });
  t.ok(await fs.exists(`${ROOT}/memory/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice`));
  t.equal((await fs.readFile(`${ROOT}/cpu/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cpu.shares`)).trim(), '1024', 'CPUAccounting alone: the default shares');
  t.match(
    fake.jobsRemoved.map((j) => `${j.unit}:${j.result}`),
    ['kubepods.slice:done', 'kubepods-burstable.slice:done', 'kubepods-burstable-pod1234.slice:done'],
    'the implicit parent has its own job, which the client is not confused by',
  );

  // Stopping the top slice stops the slices in it, and removes their directories bottom-up.
  await manager.stopUnit('kubepods.slice');
  t.equal(fake.units.size, 0);
  for (const c of ['cpu', 'memory', 'pids']) t.notOk(await fs.exists(`${ROOT}/${c}/kubepods.slice`), `${c}/kubepods.slice removed`);
  t.same(fake.realizeErrors, []);
  const stopErr = await rejection(manager.stopUnit('kubepods.slice'));
  t.ok(stopErr instanceof SystemdError);
  t.match(stopErr, { dbusName: SYSTEMD_NO_SUCH_UNIT, message: 'Unit kubepods.slice not loaded.' });
});

t.test('v2: CPUWeight, MemoryMax, TasksMax and CPUQuotaPerSecUSec land in cpu.weight, memory.max, pids.max and cpu.max; the parents delegate the controllers', async (t) => {
  const { fs, fake, manager } = await setup(t, 'v2');
  await manager.startTransientUnit(
    'kubepods.slice',
    sliceProps('-.slice', [
      { name: 'IOAccounting', signature: 'b', value: true },
      { name: 'MemoryMax', signature: 't', value: 536_870_912n },
      { name: 'CPUWeight', signature: 't', value: 39n },
      { name: 'TasksAccounting', signature: 'b', value: true },
      { name: 'TasksMax', signature: 't', value: 1024n },
    ]),
  );
  await manager.startTransientUnit('kubepods-besteffort.slice', sliceProps('kubepods.slice', [{ name: 'CPUQuotaPerSecUSec', signature: 't', value: 250_000n }, { name: 'CPUWeight', signature: 't', value: 1n }]));
  t.same(fake.realizeErrors, [], 'the fake cgroup v2 rules allowed every write');
  const root = (await fs.readFile(`${ROOT}/cgroup.subtree_control`)).trim().split(' ');
  t.same(root.sort(), ['cpu', 'io', 'memory', 'pids']);
  t.same((await fs.readFile(`${ROOT}/kubepods.slice/cgroup.subtree_control`)).trim().split(' ').sort(), ['cpu', 'memory']);
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/cpu.weight`)).trim(), '39');
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/memory.max`)).trim(), '536870912');
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/pids.max`)).trim(), '1024');
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/cpu.max`)).trim(), 'max 100000');
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/kubepods-besteffort.slice/cpu.max`)).trim(), '25000 100000');
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/kubepods-besteffort.slice/cpu.weight`)).trim(), '1');

  await manager.setUnitProperties('kubepods.slice', true, [{ name: 'MemoryMax', signature: 't', value: MAX }]);
  const [set] = fake.callsOf('SetUnitProperties');
  t.same(set.args, ['kubepods.slice', true, [['MemoryMax', { signature: 't', value: MAX }]]]);
  t.equal((await fs.readFile(`${ROOT}/kubepods.slice/memory.max`)).trim(), 'max', 'systemd rewrote the file from the new property');
  await manager.stopUnit('kubepods.slice');
  t.notOk(await fs.exists(`${ROOT}/kubepods.slice`));
});

t.test('failed jobs, UnitExists, ResetFailedUnit and systemd\'s refusals come back as Go sees them', async (t) => {
  const { fake, manager } = await setup(t, 'v1');
  fake.failNextJob('failed');
  t.match(await rejection(manager.startTransientUnit('kubepods.slice', sliceProps('-.slice'))), { message: 'error creating systemd unit `kubepods.slice`: got `failed`' });
  t.equal(fake.unit('kubepods.slice')?.state, 'failed');
  const exists = await rejection(manager.startTransientUnit('kubepods.slice', sliceProps('-.slice')));
  t.ok(exists instanceof SystemdError, 'a D-Bus error reply is a SystemdError');
  t.match(exists, { dbusName: SYSTEMD_UNIT_EXISTS, message: 'Unit kubepods.slice already exists.' });
  await manager.resetFailedUnit('kubepods.slice');
  t.equal(fake.unit('kubepods.slice'), undefined, 'a reset failed transient unit is collected');
  await manager.startTransientUnit('kubepods.slice', sliceProps('-.slice'));
  t.match(await rejection(manager.startTransientUnit('kubepods.slice', [])), { dbusName: SYSTEMD_UNIT_EXISTS });
  t.match(await rejection(manager.resetFailedUnit('nope.slice')), { dbusName: SYSTEMD_NO_SUCH_UNIT, message: 'Unit nope.slice not loaded.' });
  t.match(await rejection(manager.setUnitProperties('nope.slice', true, [])), { dbusName: SYSTEMD_NO_SUCH_UNIT });

  fake.failNextJob('canceled');
  t.match(await rejection(manager.stopUnit('kubepods.slice')), { message: 'error removing unit `kubepods.slice`: got `canceled`' });

  t.match(await rejection(manager.startTransientUnit('x.slice', [{ name: 'Delegate', signature: 'b', value: true }])), {
    dbusName: 'org.freedesktop.DBus.Error.InvalidArgs',
    message: 'Delegation not available for unit type',
  });
  t.match(await rejection(manager.startTransientUnit('x.slice', [{ name: 'Bogus', signature: 's', value: '' }])), {
    dbusName: 'org.freedesktop.DBus.Error.PropertyReadOnly',
    message: 'Cannot set property Bogus, or unknown property.',
  });
  t.match(await rejection(manager.startTransientUnit('x.slice', [{ name: 'CPUShares', signature: 'u', value: 2 }])), { dbusName: 'org.freedesktop.DBus.Error.InvalidArgs' });
  t.equal(fake.unit('x.slice'), undefined);
});

t.test('a job whose JobRemoved never comes times out after 30 s on the injected clock', async (t) => {
  const clock = new FakeClock();
  const { fake, manager, logger } = await setup(t, 'v1', { clock });
  await manager.startTransientUnit('kubepods.slice', sliceProps('-.slice'));
  fake.withholdJobRemoved = true;
  const waiting = () => logger.entries.filter((e) => e.msg === 'systemd: waiting for job').length;
  const before = waiting();
  const start = rejection(manager.startTransientUnit('kubepods-besteffort.slice', sliceProps('kubepods.slice')));
  await pollUntil(() => waiting() === before + 1, 5, 10_000);
  t.equal(clock.pendingTimers(), 1);
  clock.step(29_999);
  t.equal(clock.pendingTimers(), 1, 'still waiting just before 30 s');
  clock.step(1);
  t.match(await start, { message: 'Timeout waiting for systemd to create kubepods-besteffort.slice' });

  const stop = rejection(manager.stopUnit('kubepods.slice'));
  await pollUntil(() => waiting() === before + 2, 5, 10_000);
  clock.step(30_000);
  t.match(await stop, { message: 'Timed out while waiting for systemd to remove kubepods.slice' });
  t.equal(clock.pendingTimers(), 0);
});

t.test('a JobRemoved that overtakes the reply still completes the job', async (t) => {
  const { fake, manager } = await setup(t, 'v1');
  fake.signalBeforeReply = true;
  await manager.startTransientUnit('kubepods.slice', sliceProps('-.slice'));
  await manager.stopUnit('kubepods.slice');
  t.equal(fake.units.size, 0);
});

t.test('the connection is made lazily, again after a failure, and again after the bus restarted', async (t) => {
  const bus = await startPrivateBus(t, { prefix: 'kts-systemd-dbus-' });
  await bus.stop();
  const fs = new FakeCgroupFs({ version: 'v1', root: ROOT });
  const manager = new SystemdDbusUnitManager({ address: bus.address, logger: new RecordingLogger() });
  t.teardown(() => manager.close());
  t.match(await rejection(manager.startTransientUnit('kubepods.slice', [])), { message: new RegExp(`^failed to connect to systemd over D-Bus at ${bus.address.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `) }, 'no bus: the call fails, the manager does not');
  await bus.restart();
  const fake = await FakeSystemdManager.start(bus.address, { fs, version: 'v1', mountRoot: ROOT });
  t.teardown(() => fake.close());
  await manager.startTransientUnit('kubepods.slice', sliceProps('-.slice'));
  t.equal(fake.callsOf('Subscribe').length, 1);

  await bus.restart();
  await fake.reconnect();
  await manager.setUnitProperties('kubepods.slice', true, [{ name: 'CPUShares', signature: 't', value: 512n }]);
  t.equal(fake.callsOf('Subscribe').length, 2, 'a new connection subscribes again');
  t.equal((await fs.readFile(`${ROOT}/cpu/kubepods.slice/cpu.shares`)).trim(), '512');
  await manager.stopUnit('kubepods.slice');

  // The bus goes away while a job is waited for: the wait ends with the lost connection, not a 30 s hang.
  fake.withholdJobRemoved = true;
  const start = rejection(manager.startTransientUnit('kubepods.slice', sliceProps('-.slice')));
  await pollUntil(() => fake.unit('kubepods.slice') !== undefined, 5, 10_000);
  await bus.stop();
  t.match(await start, { message: /^D-Bus connection to systemd lost while waiting for job \/org\/freedesktop\/systemd1\/job\/\d+$/ });

  manager.close();
  t.match(await rejection(manager.resetFailedUnit('kubepods.slice')), { message: 'SystemdDbusUnitManager: closed' });
});

t.test('unit properties are checked against their signature before anything is sent', async (t) => {
  t.same(encodeUnitProperty({ name: 'CPUShares', signature: 't', value: 2 }), ['CPUShares', { signature: 't', value: 2 }]);
  t.same(encodeUnitProperty({ name: 'AllowedCPUs', signature: 'ay', value: [3] }), ['AllowedCPUs', { signature: 'ay', value: [3] }]);
  t.same(encodeUnitProperty({ name: 'X', signature: 'au', value: [1, 4294967295] }), ['X', { signature: 'au', value: [1, 4294967295] }]);
  t.throws(() => encodeUnitProperty({ name: 'TasksMax', signature: 't', value: -1 }), { message: 'systemd unit property TasksMax: value -1 does not fit D-Bus signature "t"' });
  t.throws(() => encodeUnitProperty({ name: 'MemoryMax', signature: 't', value: 2n ** 64n }), { message: 'systemd unit property MemoryMax: value 18446744073709551616n does not fit D-Bus signature "t"' });
  t.throws(() => encodeUnitProperty({ name: 'CPUShares', signature: 't', value: 1.5 }), /does not fit D-Bus signature "t"/);
  t.throws(() => encodeUnitProperty({ name: 'Wants', signature: 'as', value: [1, 2] }), { message: 'systemd unit property Wants: value [1,2] does not fit D-Bus signature "as"' });
  t.throws(() => encodeUnitProperty({ name: 'X', signature: 'au', value: [-1] }), /does not fit D-Bus signature "au"/);
  t.throws(() => encodeUnitProperty({ name: 'Delegate', signature: 'b', value: 'yes' }), /does not fit D-Bus signature "b"/);
  t.throws(() => encodeUnitProperty({ name: 'X', signature: 'ss', value: 'a' }), { message: 'systemd unit property X: D-Bus signature "ss" is not one complete type' });
  t.throws(() => encodeUnitProperty({ name: 'X', signature: 'z', value: 'a' }), /^systemd unit property X: invalid D-Bus signature "z"/);
  const manager = new SystemdDbusUnitManager({ address: 'unix:path=/nonexistent/kts-bus', logger: new RecordingLogger() });
  t.teardown(() => manager.close());
  await t.rejects(manager.startTransientUnit('a.slice', [{ name: 'CPUShares', signature: 't', value: -5 }]), { message: /does not fit/ }, 'refused before connecting');
  t.throws(() => new SystemdDbusUnitManager({ jobTimeoutMs: 0 }), { message: 'SystemdDbusUnitManager: jobTimeoutMs must be positive, got 0' });
});

t.test('v1 on a real directory tree: the slice directories and files systemd would make, removed on stop', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-systemd-tree-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const c of ['cpu', 'cpuacct', 'memory', 'pids', 'blkio']) await mkdir(join(dir, c));
  // A directory tree as a cgroup filesystem: rmdir takes the interface files with the directory, as cgroupfs does.
  const treeFs: FakeSystemdFs = {
    mkdir: (p) => mkdir(p),
    writeFile: (p, d) => writeFile(p, d),
    readdir: (p) => readdir(p),
    exists: (p) =>
      access(p).then(
        () => true,
        () => false,
      ),
    rmdir: async (p) => {
      for (const e of readdirSync(p)) if (!statSync(join(p, e)).isDirectory()) unlinkSync(join(p, e));
      await rmdir(p);
    },
  };
  const bus = await startPrivateBus(t, { prefix: 'kts-systemd-dbus-' });
  const fake = await FakeSystemdManager.start(bus.address, { fs: treeFs, version: 'v1', mountRoot: dir });
  const manager = new SystemdDbusUnitManager({ address: bus.address, logger: new RecordingLogger() });
  t.teardown(async () => {
    manager.close();
    await fake.close();
  });
  await manager.startTransientUnit('kts-a-b.slice', sliceProps('kts-a.slice', [{ name: 'MemoryLimit', signature: 't', value: MAX }, { name: 'CPUQuotaPerSecUSec', signature: 't', value: MAX }]));
  t.same(fake.cgroupPaths('kts-a-b.slice'), ['cpu', 'cpuacct', 'memory', 'pids', 'blkio'].map((c) => `${dir}/${c}/kts.slice/kts-a.slice/kts-a-b.slice`));
  t.equal(readFileSync(join(dir, 'memory/kts.slice/kts-a.slice/kts-a-b.slice/memory.limit_in_bytes'), 'utf8'), '-1');
  t.equal(readFileSync(join(dir, 'cpu/kts.slice/kts-a.slice/kts-a-b.slice/cpu.cfs_quota_us'), 'utf8'), '-1');
  t.same([...fake.units.keys()].sort(), ['kts-a-b.slice', 'kts-a.slice', 'kts.slice'], 'both parents started implicitly');
  await manager.stopUnit('kts.slice');
  t.same(readdirSync(join(dir, 'memory')), [], 'the whole subtree is gone');
  t.equal(fake.units.size, 0);
  t.same(fake.realizeErrors, []);
});
