import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import {
  cleanupOrphanedPodCgroups,
  ContainerManager,
  cpuQuotaPerSecUSec,
  resourceConfigForPod,
  SYSTEMD_INFINITY,
  SYSTEMD_NO_SUCH_UNIT,
  SYSTEMD_UNIT_EXISTS,
  SystemdCgroupManager,
  SystemdError,
  systemdResourceProperties,
  type CgroupFs,
  type CgroupVersion,
  type SystemdUnitManager,
  type UnitProperty,
} from '../src/index.js';
import { FakeCgroupFs } from '../src/testing.js';
import { bestEffortPod, burstablePod, CG, guaranteedPod, makePod, container } from './helpers.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;

type UnitCall =
  | { op: 'start'; unit: string; props: UnitProperty[] }
  | { op: 'stop'; unit: string }
  | { op: 'set'; unit: string; runtime: boolean; props: UnitProperty[] }
  | { op: 'reset'; unit: string };

/** An in-memory SystemdUnitManager that records every call (and logs it into a shared event list). */
class RecordingUnits implements SystemdUnitManager {
  readonly calls: UnitCall[] = [];
  readonly units = new Set<string>();
  /** Errors to reject the next call of an operation with. */
  readonly fail = new Map<UnitCall['op'], Error>();
  closed = false;

  constructor(private readonly events: string[] = []) {}

  private record(call: UnitCall): void {
    this.calls.push(call);
    this.events.push(`${call.op} ${call.unit}`);
    const err = this.fail.get(call.op);
    if (err) {
      this.fail.delete(call.op);
      throw err;
    }
  }

  async startTransientUnit(name: string, properties: UnitProperty[]): Promise<void> {
    this.record({ op: 'start', unit: name, props: properties });
    if (this.units.has(name)) throw new SystemdError(SYSTEMD_UNIT_EXISTS, `Unit ${name} was already loaded or has a fragment file.`);
    this.units.add(name);
  }

  async stopUnit(name: string): Promise<void> {
    this.record({ op: 'stop', unit: name });
    if (!this.units.delete(name)) throw new SystemdError(SYSTEMD_NO_SUCH_UNIT, `Unit ${name} not loaded.`);
  }

  async setUnitProperties(name: string, runtime: boolean, properties: UnitProperty[]): Promise<void> {
    this.record({ op: 'set', unit: name, runtime, props: properties });
  }

  async resetFailedUnit(name: string): Promise<void> {
    this.record({ op: 'reset', unit: name });
  }

  close(): void {
    this.closed = true;
  }

  starts(): string[] {
    return this.calls.filter((c) => c.op === 'start').map((c) => c.unit);
  }
}

/** A CgroupFs that logs mkdir, rmdir and writes into the shared event list. */
function loggingFs(fs: FakeCgroupFs, events: string[]): CgroupFs {
  return {
    readFile: (path) => fs.readFile(path),
    writeFile: async (path, data) => {
      await fs.writeFile(path, data);
      events.push(`write ${path.slice(CG.length)}=${data}`);
    },
    mkdir: async (path) => {
      await fs.mkdir(path);
      events.push(`mkdir ${path.slice(CG.length)}`);
    },
    rmdir: async (path) => {
      await fs.rmdir(path);
      events.push(`rmdir ${path.slice(CG.length)}`);
    },
    readdir: (path) => fs.readdir(path),
    exists: (path) => fs.exists(path),
  };
}

function setup(version: CgroupVersion, opts: { subsystems?: string[] } = {}) {
  const events: string[] = [];
  const fs = new FakeCgroupFs({ version, subsystems: opts.subsystems });
  const units = new RecordingUnits(events);
  const logger = new RecordingLogger();
  const clock = new FakeClock();
  const manager = new SystemdCgroupManager({ version, units, fs: loggingFs(fs, events), logger, clock });
  return { events, fs, units, logger, clock, manager };
}

const p = (name: string, signature: string, value: UnitProperty['value']): UnitProperty => ({ name, signature, value });
const sliceHead = (version: CgroupVersion, unit: string, parent: string): UnitProperty[] => [
  p('Description', 's', `libcontainer container ${unit}`),
  p('Wants', 'as', [parent]),
  p('MemoryAccounting', 'b', true),
  p('CPUAccounting', 'b', true),
  p(version === 'v1' ? 'BlockIOAccounting' : 'IOAccounting', 'b', true),
  p('DefaultDependencies', 'b', false),
];
const DEVICES = [p('DevicePolicy', 's', 'auto'), p('DeviceAllow', 'a(ss)', [])];

t.test('CPUQuotaPerSecUSec: rc92 rounds up to whole 10 ms, USEC_INFINITY without a quota', async (t) => {
  t.equal(cpuQuotaPerSecUSec(25000, 100000), 250000n);
  t.equal(cpuQuotaPerSecUSec(1500, 100000), 20000n, '15 ms per second becomes 20 ms');
  t.equal(cpuQuotaPerSecUSec(1000, 100000), 10000n, 'the minimum quota (1 ms per 100 ms) is exactly 10 ms');
  t.equal(cpuQuotaPerSecUSec(33333, 50000), 670000n, '666660 rounds up');
  t.equal(cpuQuotaPerSecUSec(-1, 100000), SYSTEMD_INFINITY);
  t.equal(SYSTEMD_INFINITY, 18446744073709551615n);
});

t.test('resource properties as libcontainer builds them for the QoS slices and pods (v1)', async (t) => {
  const v1 = (r: Parameters<typeof systemdResourceProperties>[1]) => systemdResourceProperties('v1', r);
  // kubepods with node allocatable, burstable (no resources), besteffort (2 shares).
  t.same(v1({ memoryLimitBytes: 6.5 * GiB, cpuShares: 3481, pidsLimit: 31768 }), [
    ...DEVICES,
    p('MemoryLimit', 't', BigInt(6.5 * GiB)),
    p('CPUShares', 't', 3481n),
    p('TasksAccounting', 'b', true),
    p('TasksMax', 't', 31768n),
  ]);
  t.same(v1({}), DEVICES);
  t.same(v1({ cpuShares: 2 }), [...DEVICES, p('CPUShares', 't', 2n)]);
  // Guaranteed: shares, quota, period, memory.
  const guaranteed = resourceConfigForPod(guaranteedPod('g', '250m', '64Mi'));
  t.same(v1(guaranteed), [...DEVICES, p('MemoryLimit', 't', BigInt(64 * MiB)), p('CPUShares', 't', 256n), p('CPUQuotaPerSecUSec', 't', 250000n)]);
  // Burstable with a CPU limit of 15m on every container: the quota is rounded up.
  const burstableLimited = resourceConfigForPod(makePod('b', [container('app', { requests: { cpu: '10m' }, limits: { cpu: '15m' } })]));
  t.same(v1(burstableLimited), [...DEVICES, p('CPUShares', 't', 10n), p('CPUQuotaPerSecUSec', 't', 20000n)]);
  t.same(v1(resourceConfigForPod(burstablePod('b', '250m'))), [...DEVICES, p('CPUShares', 't', 256n)]);
  t.same(v1(resourceConfigForPod(bestEffortPod('e'))), [...DEVICES, p('CPUShares', 't', 2n)]);
  // --cpu-cfs-quota=false: quota -1 with a period is USEC_INFINITY; pids -1 is TasksMax=infinity.
  t.same(v1({ cpuShares: 512, cpuQuota: -1, cpuPeriod: 100000, pidsLimit: -1 }), [
    ...DEVICES,
    p('CPUShares', 't', 512n),
    p('CPUQuotaPerSecUSec', 't', SYSTEMD_INFINITY),
    p('TasksAccounting', 'b', true),
    p('TasksMax', 't', SYSTEMD_INFINITY),
  ]);
  t.same(v1({ cpuQuota: 20000 }), DEVICES, 'no period, no CPUQuotaPerSecUSec (rc92 needs both)');
  t.same(v1({ memoryLimitBytes: -1 }), [...DEVICES, p('MemoryLimit', 't', SYSTEMD_INFINITY)], 'uint64(-1)');
});

t.test('resource properties as libcontainer builds them (v2): MemoryMax, CPUWeight, no devices', async (t) => {
  const v2 = (r: Parameters<typeof systemdResourceProperties>[1]) => systemdResourceProperties('v2', r);
  t.same(v2({ memoryLimitBytes: 4 * GiB, cpuShares: 2048, pidsLimit: 4096 }), [
    p('MemoryMax', 't', BigInt(4 * GiB)),
    p('CPUWeight', 't', 79n),
    p('TasksAccounting', 'b', true),
    p('TasksMax', 't', 4096n),
  ]);
  t.same(v2({}), []);
  t.same(v2({ cpuShares: 2 }), [p('CPUWeight', 't', 1n)]);
  t.same(v2(resourceConfigForPod(guaranteedPod('g', '1', '128Mi'))), [p('MemoryMax', 't', BigInt(128 * MiB)), p('CPUWeight', 't', 39n), p('CPUQuotaPerSecUSec', 't', 1000000n)]);
  t.same(v2({ pidsLimit: -1 }), [], 'v2 sets TasksMax only for a positive limit');
});

for (const version of ['v1', 'v2'] as const) {
  t.test(`create (${version}): StartTransientUnit with Go's properties, the directories, then Update`, async (t) => {
    const { events, fs, units, manager } = setup(version);
    await manager.create(['kubepods'], { memoryLimitBytes: 4 * GiB, cpuShares: 2048 });
    await manager.create(['kubepods', 'burstable'], {});
    const pod = ['kubepods', 'burstable', 'pod6c1a4e95-6bb6-11e6-bc26-28d2444e470d'];
    await manager.create(pod, { cpuShares: 256, pidsLimit: 100 });
    const podUnit = 'kubepods-burstable-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice';
    t.same(units.starts(), ['kubepods.slice', 'kubepods-burstable.slice', podUnit]);
    const devices = version === 'v1' ? DEVICES : [];
    t.same(units.calls[0], {
      op: 'start',
      unit: 'kubepods.slice',
      props: [
        ...sliceHead(version, 'kubepods.slice', '-.slice'),
        ...devices,
        version === 'v1' ? p('MemoryLimit', 't', BigInt(4 * GiB)) : p('MemoryMax', 't', BigInt(4 * GiB)),
        version === 'v1' ? p('CPUShares', 't', 2048n) : p('CPUWeight', 't', 79n),
      ],
    });
    const podStart = units.calls.find((c) => c.op === 'start' && c.unit === podUnit);
    t.same(podStart, {
      op: 'start',
      unit: podUnit,
      props: [
        ...sliceHead(version, podUnit, 'kubepods-burstable.slice'),
        ...devices,
        version === 'v1' ? p('CPUShares', 't', 256n) : p('CPUWeight', 't', 10n),
        p('TasksAccounting', 'b', true),
        p('TasksMax', 't', 100n),
      ],
    });
    // Update after Apply: SetUnitProperties(runtime) with the resource properties, then the files.
    const set = units.calls.find((c) => c.op === 'set' && c.unit === 'kubepods.slice');
    t.same(set && set.op === 'set' && [set.runtime, set.props], [true, (units.calls[0] as { props: UnitProperty[] }).props.slice(6)]);
    const podDir = `/kubepods.slice/kubepods-burstable.slice/${podUnit}`;
    const podEvents = events.slice(events.indexOf(`start ${podUnit}`));
    if (version === 'v1') {
      t.ok(fs.isDir(`${CG}/memory${podDir}`) && fs.isDir(`${CG}/cpu${podDir}`) && fs.isDir(`${CG}/pids${podDir}`) && fs.isDir(`${CG}/systemd${podDir}`), 'a directory in every hierarchy');
      t.equal(fs.read(`${CG}/memory/kubepods.slice/memory.limit_in_bytes`), String(4 * GiB));
      t.equal(fs.read(`${CG}/cpu${podDir}/cpu.shares`), '256');
      t.equal(fs.read(`${CG}/pids${podDir}/pids.max`), '100');
      t.equal(fs.read(`${CG}/cpuset${podDir}/cpuset.cpus`), '0-3', 'cpuset copied from the parent on the way down');
      t.same(podEvents.filter((e) => !e.startsWith('mkdir') && !e.includes('cpuset.')), [
        `start ${podUnit}`,
        `set ${podUnit}`,
        `write ${'/cpu' + podDir}/cpu.shares=256`,
        `write ${'/pids' + podDir}/pids.max=100`,
      ]);
    } else {
      t.ok(fs.isDir(`${CG}${podDir}`));
      t.equal(fs.read(`${CG}/kubepods.slice/memory.max`), String(4 * GiB));
      t.equal(fs.read(`${CG}/kubepods.slice/cpu.weight`), '79');
      t.equal(fs.read(`${CG}${podDir}/cpu.weight`), '10');
      t.equal(fs.read(`${CG}${podDir}/pids.max`), '100');
      const order = podEvents.filter((e) => e.startsWith('start') || e.startsWith('set') || e.startsWith('mkdir') || e.includes('cpu.weight') || e.includes('pids.max'));
      t.same(order, [`start ${podUnit}`, `mkdir ${podDir}`, `set ${podUnit}`, `write ${podDir}/pids.max=100`, `write ${podDir}/cpu.weight=10`]);
    }
    t.equal(manager.name(pod), `/kubepods.slice/kubepods-burstable.slice/${podUnit}`, 'the cgroupParent the runtime gets');
    t.same(manager.cgroupName(manager.name(pod)), pod);
    t.ok(await manager.exists(pod));
    t.notOk(await manager.exists(['kubepods', 'besteffort']));
    t.same(await manager.listChildren(['kubepods', 'burstable']), [podUnit]);
  });
}

t.test('create: an existing unit is fine (rc92 startUnit), its properties come from the Update', async (t) => {
  const { units, manager } = setup('v1');
  units.units.add('kubepods.slice');
  await manager.create(['kubepods'], { cpuShares: 1024 });
  t.same(
    units.calls.map((c) => c.op),
    ['start', 'set'],
  );
  t.same((units.calls[1] as { props: UnitProperty[] }).props, [...DEVICES, p('CPUShares', 't', 1024n)]);
  t.notOk(units.calls.some((c) => c.op === 'reset'), 'no ResetFailedUnit for UnitExists');
});

t.test('create: a failed start job resets the failed unit; a D-Bus error names the unit; nothing is made', async (t) => {
  const { fs, units, manager } = setup('v1');
  units.fail.set('start', new Error('error creating systemd unit `kubepods.slice`: got `failed`'));
  await t.rejects(manager.create(['kubepods'], {}), { message: 'error creating systemd unit `kubepods.slice`: got `failed`' });
  t.same(
    units.calls.map((c) => `${c.op} ${c.unit}`),
    ['start kubepods.slice', 'reset kubepods.slice'],
  );
  t.notOk(fs.isDir(`${CG}/memory/kubepods.slice`));

  units.calls.length = 0;
  units.fail.set('start', new SystemdError('org.freedesktop.DBus.Error.AccessDenied', 'Access denied'));
  await t.rejects(manager.create(['kubepods'], {}), {
    message: 'error creating systemd unit `kubepods.slice`: org.freedesktop.DBus.Error.AccessDenied: Access denied',
  });
  t.same(
    units.calls.map((c) => c.op),
    ['start'],
    'a D-Bus error reply is returned as it is',
  );
  await t.rejects(manager.create([], {}), { message: /the root cgroup is not a systemd unit/ });
});

t.test('create: a failed Update is only logged (Go: utilruntime.HandleError)', async (t) => {
  const { units, logger, manager } = setup('v1');
  units.fail.set('set', new SystemdError('org.freedesktop.DBus.Error.InvalidArgs', 'Invalid argument'));
  await manager.create(['kubepods'], { cpuShares: 1024 });
  const entry = logger.find('cgroup update failed');
  t.match((entry?.err as Error).message, 'failed to set properties of systemd unit "kubepods.slice" for cgroup [kubepods]: org.freedesktop.DBus.Error.InvalidArgs: Invalid argument');
  t.same(entry?.kv, { cgroupName: '[kubepods]' });
});

t.test('update: SetUnitProperties(runtime) then the files; a failed SetUnitProperties writes nothing', async (t) => {
  const { events, fs, units, manager } = setup('v1');
  await manager.create(['kubepods', 'burstable'], {});
  events.length = 0;
  await manager.update(['kubepods', 'burstable'], { cpuShares: 1126 });
  t.same(events, ['set kubepods-burstable.slice', 'write /cpu/kubepods.slice/kubepods-burstable.slice/cpu.shares=1126']);
  const last = units.calls.at(-1)!;
  t.same(last, { op: 'set', unit: 'kubepods-burstable.slice', runtime: true, props: [...DEVICES, p('CPUShares', 't', 1126n)] });
  events.length = 0;
  units.fail.set('set', new SystemdError('org.freedesktop.DBus.Error.NoReply', 'Did not receive a reply'));
  await t.rejects(manager.update(['kubepods', 'burstable'], { cpuShares: 2 }), {
    message: 'failed to set properties of systemd unit "kubepods-burstable.slice" for cgroup [kubepods burstable]: org.freedesktop.DBus.Error.NoReply: Did not receive a reply',
  });
  t.same(events, ['set kubepods-burstable.slice']);
  t.equal(fs.read(`${CG}/cpu/kubepods.slice/kubepods-burstable.slice/cpu.shares`), '1126');
});

for (const version of ['v1', 'v2'] as const) {
  t.test(`destroy (${version}): StopUnit, then the directories left behind; a unit already gone is fine`, async (t) => {
    const { events, fs, units, logger, manager } = setup(version);
    const pod = ['kubepods', 'besteffort', 'pod1-2'];
    await manager.create(pod, { cpuShares: 2 });
    const dir = version === 'v1' ? `${CG}/cpu/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice` : `${CG}/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice`;
    t.ok(fs.isDir(dir));
    events.length = 0;
    await manager.destroy(pod);
    t.equal(events[0], 'stop kubepods-besteffort-pod1_2.slice');
    t.ok(events.slice(1).every((e) => e.startsWith('rmdir')) && events.length > 1, 'then rmdir only');
    t.notOk(fs.isDir(dir));
    t.same(fs.dirsUnder(CG).filter((d) => d.includes('pod1_2')), [], 'gone from every hierarchy');
    // Again: NoSuchUnit, nothing left to remove — no error.
    await manager.destroy(pod);
    t.ok(logger.find('systemd unit already gone'));
    // A stop job that fails is logged and the directories go all the same.
    await manager.create(pod, {});
    units.fail.set('stop', new Error('error removing unit `kubepods-besteffort-pod1_2.slice`: got `failed`'));
    await manager.destroy(pod);
    t.notOk(fs.isDir(dir));
    t.match(logger.messages('warn').at(-1), /^error removing unit `kubepods-besteffort-pod1_2.slice`: .*Continuing\.\.\.$/);
  });
}

t.test('destroy: a cgroup that cannot be removed names the CgroupName and the paths', async (t) => {
  const { fs, manager, clock } = setup('v1', { subsystems: ['cpu', 'memory', 'pids'] });
  const pod = ['kubepods', 'pod1'];
  await manager.create(pod, {});
  fs.injectError('rmdir', `${CG}/memory/kubepods.slice/kubepods-pod1.slice`, 'EBUSY');
  const destroyed = t.rejects(manager.destroy(pod), {
    message: 'unable to destroy cgroup paths for cgroup [kubepods pod1] : Failed to remove paths: map[memory:/sys/fs/cgroup/memory/kubepods.slice/kubepods-pod1.slice]',
  });
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    clock.step(200);
  }
  await destroyed;
});

t.test('pids and memory usage are read on the slice path', async (t) => {
  const { fs, manager } = setup('v1');
  const pod = ['kubepods', 'burstable', 'pod-a'];
  await manager.create(pod, {});
  const dir = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod_a.slice';
  fs.addProcess(`${CG}/memory${dir}`, 41);
  fs.mkdirp(`${CG}/cpu${dir}/cri-containerd-abc.scope`);
  fs.addProcess(`${CG}/cpu${dir}/cri-containerd-abc.scope`, 42);
  fs.setFile(`${CG}/memory${dir}/memory.usage_in_bytes`, '12345');
  t.same(await manager.pids(pod), [41, 42]);
  t.equal(await manager.memoryUsageBytes(pod), 12345);
});

function systemdContainerManager(version: CgroupVersion, extra: Partial<ConstructorParameters<typeof ContainerManager>[0]> = {}) {
  const events: string[] = [];
  const fs = new FakeCgroupFs({ version });
  const units = new RecordingUnits(events);
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const cgroupManager = new SystemdCgroupManager({ version, units, fs, clock, logger });
  const killed: number[] = [];
  const cm = new ContainerManager({
    capacity: { milliCpu: 2000, memoryBytes: 4 * GiB, pids: 4096 },
    cgroupDriver: 'systemd',
    cgroupManager,
    clock,
    logger,
    killProcess: (pid) => {
      killed.push(pid);
      fs.removeProcess(pid);
    },
    ...extra,
  });
  return { events, fs, units, clock, cm, killed };
}

for (const version of ['v1', 'v2'] as const) {
  t.test(`ContainerManager on the systemd driver (${version}): QoS slices, a pod slice found again by the orphan cleanup and destroyed`, async (t) => {
    const { fs, units, cm, killed } = systemdContainerManager(version, { systemReserved: { cpu: '500m', memory: '1Gi' } });
    await cm.start(() => [burstablePod('b1', '500m')]);
    t.same(units.starts(), ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice']);
    t.same(units.calls[0].op === 'start' && units.calls[0].props.slice(0, 2), [p('Description', 's', 'libcontainer container kubepods.slice'), p('Wants', 'as', ['-.slice'])]);
    const kubepods = version === 'v1' ? `${CG}/memory/kubepods.slice` : `${CG}/kubepods.slice`;
    t.equal(fs.read(`${kubepods}/${version === 'v1' ? 'memory.limit_in_bytes' : 'memory.max'}`), String(3 * GiB), 'node allocatable on kubepods.slice');
    const burstableCpu = version === 'v1' ? `${CG}/cpu/kubepods.slice/kubepods-burstable.slice/cpu.shares` : `${CG}/kubepods.slice/kubepods-burstable.slice/cpu.weight`;
    t.equal(fs.read(burstableCpu), version === 'v1' ? '512' : '20');
    t.equal(cm.status().nodeAllocatableCgroup, '/kubepods.slice');
    t.ok(cm.status().cgroups['/kubepods.slice/kubepods-besteffort.slice'], 'status keys are the slice paths');

    const uid = '6c1a4e95-6bb6-11e6-bc26-28d2444e470d';
    const pod = guaranteedPod(uid, '250m', '64Mi');
    t.equal(cm.podCgroupParent(pod), '/kubepods.slice/kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice');
    const pcm = cm.newPodContainerManager();
    await pcm.ensureExists(pod);
    t.ok(await pcm.exists(pod));
    t.ok(units.units.has('kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice'));
    const podStart = units.calls.find((c) => c.op === 'start' && c.unit.includes(uid.slice(0, 8)));
    t.same(podStart?.op === 'start' && podStart.props.slice(6), [
      ...(version === 'v1' ? DEVICES : []),
      version === 'v1' ? p('MemoryLimit', 't', BigInt(64 * MiB)) : p('MemoryMax', 't', BigInt(64 * MiB)),
      version === 'v1' ? p('CPUShares', 't', 256n) : p('CPUWeight', 't', 10n),
      p('CPUQuotaPerSecUSec', 't', 250000n),
    ]);
    const podDir = version === 'v1' ? `${CG}/cpu/kubepods.slice/kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice` : `${CG}/kubepods.slice/kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice`;
    t.equal(fs.read(`${podDir}/${version === 'v1' ? 'cpu.cfs_quota_us' : 'cpu.max'}`), version === 'v1' ? '25000' : '25000 100000');

    const found = await pcm.getAllPodsFromCgroups();
    t.same([...found], [[uid, ['kubepods', `pod${uid}`]]], 'the uid comes back with its dashes; the QoS slices are not pods');
    t.same(pcm.isPodCgroup(cm.podCgroupParent(pod)), { isPod: true, uid });
    t.same(pcm.isPodCgroup('/kubepods.slice/kubepods-burstable.slice'), { isPod: false });

    const leaf = version === 'v1' ? `${CG}/memory/kubepods.slice/kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice/cri-containerd-abc.scope` : `${podDir}/cri-containerd-abc.scope`;
    fs.mkdirp(leaf);
    fs.addProcess(leaf, 4242);
    await cleanupOrphanedPodCgroups(pcm, found, new Set(), () => false);
    if (version === 'v1') t.same(killed, [4242], 'what still ran in the pod slice was killed, pid by pid');
    else t.same([killed, fs.writesTo(/cgroup\.kill$/).map((w) => w.path)], [[], [`${podDir}/cgroup.kill`]], 'v2: killed at once through the slice\'s cgroup.kill');
    t.ok(units.calls.some((c) => c.op === 'stop' && c.unit === 'kubepods-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice'), 'the unit was stopped');
    t.notOk(fs.isDir(podDir));
    t.same([...(await pcm.getAllPodsFromCgroups())], []);
    await cm.stop();
  });
}

t.test('ContainerManager on systemd: --system-reserved-cgroup=/system.slice is the unit system.slice', async (t) => {
  const { fs, units, cm } = systemdContainerManager('v1', {
    enforceNodeAllocatable: ['pods', 'system-reserved'],
    systemReservedCgroup: '/system.slice',
    systemReserved: { cpu: '500m', memory: '1Gi' },
  });
  for (const h of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'blkio', 'devices', 'freezer', 'systemd']) fs.mkdirp(`${CG}/${h}/system.slice`);
  await cm.start(() => []);
  const set = units.calls.filter((c) => c.op === 'set' && c.unit === 'system.slice');
  t.same(set.length === 1 && set[0].op === 'set' && set[0].props, [...DEVICES, p('MemoryLimit', 't', BigInt(GiB)), p('CPUShares', 't', 512n)]);
  t.equal(fs.read(`${CG}/memory/system.slice/memory.limit_in_bytes`), String(GiB));
  t.notOk(fs.isDir(`${CG}/memory/system.slice.slice`), 'not the cgroupfs reading of the name ("system.slice" escaped again)');
});

t.test('ContainerManager builds the SystemdCgroupManager from systemdUnits', async (t) => {
  const units = new RecordingUnits();
  const cm = new ContainerManager({ capacity: { milliCpu: 1000, memoryBytes: GiB }, cgroupDriver: 'systemd', systemdUnits: units, clock: new FakeClock() });
  t.equal(cm.podCgroupParent(bestEffortPod('a-b')), '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poda_b.slice');
  t.equal(cm.status().nodeAllocatableCgroup, '/kubepods.slice');
});
