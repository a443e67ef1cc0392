// Integration test on the host's real cgroup v1 hierarchies: runs only as root on a cgroup v1 host.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { ContainerManager, createCgroupManager, type CgroupManager } from '../src/index.js';
import { ensureHostCgroup, removeHostCgroup } from '../src/testing.js';
import { guaranteedPod, burstablePod } from './helpers.js';

const ROOT = '/sys/fs/cgroup';
const skipReason =
  process.getuid?.() !== 0
    ? 'not running as root'
    : existsSync(`${ROOT}/cgroup.controllers`)
      ? 'the host uses cgroup v2 (unified hierarchy)'
      : !existsSync(`${ROOT}/cpu/cpu.shares`) || !existsSync(`${ROOT}/memory/memory.limit_in_bytes`)
        ? 'no cgroup v1 cpu and memory hierarchies mounted'
        : undefined;

if (skipReason) {
  console.log(`# skipping the real cgroup v1 test: ${skipReason}`);
  t.pass(`nothing to check here: ${skipReason}`);
} else {
  const MiB = 2 ** 20;
  const testRoot = `kubelet-ts-test-${process.pid}`;
  const read = (path: string) => readFileSync(`${ROOT}/${path}`, 'utf8').trim();

  t.test('kubepods, QoS and pod cgroups on the real cgroupfs, then all removed', async (t) => {
    const cgroups: CgroupManager = await createCgroupManager({ driver: 'cgroupfs' });
    t.equal(cgroups.version, 'v1');
    await cgroups.create([testRoot]);
    t.teardown(async () => {
      await cgroups.destroy([testRoot]);
    });
    const cm = new ContainerManager({
      cgroupRoot: `/${testRoot}`,
      capacity: { milliCpu: 2000, memoryBytes: 2048 * MiB },
      systemReserved: { cpu: '500m', memory: '512Mi' },
      kubeReserved: { memory: '256Mi' },
    });
    let pods = [burstablePod('b1', '300m')];
    await cm.start(() => pods);
    t.teardown(() => cm.stop());

    t.equal(read(`memory/${testRoot}/kubepods/memory.limit_in_bytes`), String(1280 * MiB), 'capacity - system - kube reserved');
    t.equal(read(`cpu/${testRoot}/kubepods/cpu.shares`), '1536', '1500m allocatable');
    t.equal(read(`cpu/${testRoot}/kubepods/besteffort/cpu.shares`), '2');
    t.equal(read(`cpu/${testRoot}/kubepods/burstable/cpu.shares`), '307');
    t.not(read(`cpuset/${testRoot}/kubepods/burstable/cpuset.cpus`), '', 'cpuset.cpus inherited from the parent');
    pods = [...pods, burstablePod('b2', '700m')];
    await cm.updateQOSCgroups();
    t.equal(read(`cpu/${testRoot}/kubepods/burstable/cpu.shares`), '1024');

    const pod = guaranteedPod('real1', '250m', '64Mi');
    const pcm = cm.newPodContainerManager();
    await pcm.ensureExists(pod);
    const { name, literal } = pcm.getPodContainerName(pod);
    t.equal(literal, `/${testRoot}/kubepods/podreal1`);
    t.ok(await pcm.exists(pod));
    t.equal(read(`cpu${literal}/cpu.cfs_quota_us`), '25000');
    t.equal(read(`cpu${literal}/cpu.cfs_period_us`), '100000');
    t.equal(read(`cpu${literal}/cpu.shares`), '256');
    t.equal(read(`memory${literal}/memory.limit_in_bytes`), String(64 * MiB));
    t.same([...(await pcm.getAllPodsFromCgroups()).keys()], ['real1']);

    // A process left in a container cgroup below the pod's is SIGKILLed by destroy.
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = once(child, 'exit');
    await cgroups.create([...name, 'ctr']);
    for (const subsystem of ['cpu', 'memory']) await writeFile(`${ROOT}/${subsystem}${literal}/ctr/cgroup.procs`, String(child.pid));
    t.same(await cgroups.pids(name), [child.pid]);
    t.ok((await cgroups.memoryUsageBytes(name)) >= 0);
    await pcm.destroy(name);
    const [, signal] = await exited;
    t.equal(signal, 'SIGKILL');
    t.notOk(existsSync(`${ROOT}/cpu${literal}`), 'the pod cgroup is gone');
    t.notOk(existsSync(`${ROOT}/memory${literal}`));

    await cm.stop();
    await cgroups.destroy([testRoot]);
    for (const subsystem of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids']) t.notOk(existsSync(`${ROOT}/${subsystem}/${testRoot}`), `${subsystem} cleaned up`);
  });

  t.test('ensureHostCgroup makes a --cgroup-root in every hierarchy; removeHostCgroup removes it, twice without error', async (t) => {
    const literal = `/${testRoot}-harness/node-a`;
    await ensureHostCgroup(literal);
    for (const subsystem of ['cpu', 'memory', 'pids']) t.ok(existsSync(`${ROOT}/${subsystem}${literal}`), `${subsystem}${literal} exists`);
    await ensureHostCgroup(literal);
    t.pass('making it again is fine');
    await removeHostCgroup(`/${testRoot}-harness`);
    for (const subsystem of ['cpu', 'memory', 'pids']) t.notOk(existsSync(`${ROOT}/${subsystem}/${testRoot}-harness`), `${subsystem} removed with its children`);
    await removeHostCgroup(`/${testRoot}-harness`);
    t.pass('removing a missing one is fine');
  });

  // A hybrid host (systemd's default on many distributions, and this machine's): runc makes every container's
  // cgroup in the cgroup2 hierarchy at /sys/fs/cgroup/unified too, mkdir -p'ing the pod's directory.
  const hybridReason = existsSync(`${ROOT}/unified/cgroup.controllers`) ? undefined : 'no cgroup2 hierarchy at /sys/fs/cgroup/unified (not a hybrid host)';
  t.test('hybrid host: destroy removes the pod cgroup runc left in the unified hierarchy; removeHostCgroup too', { skip: hybridReason }, async (t) => {
    const root = `kts-cm-hybrid-${process.pid}`;
    const cgroups = await createCgroupManager({ driver: 'cgroupfs' });
    t.teardown(() => removeHostCgroup(`/${root}`));
    const pod = [root, 'kubepods', 'besteffort', 'podh1'];
    await cgroups.create(pod);
    const unifiedPod = `${ROOT}/unified/${root}/kubepods/besteffort/podh1`;
    await mkdir(`${unifiedPod}/ctr`, { recursive: true }); // as runc does
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = once(child, 'exit');
    await writeFile(`${unifiedPod}/ctr/cgroup.procs`, String(child.pid));

    await cgroups.destroy(pod);
    t.notOk(existsSync(`${ROOT}/cpu/${root}/kubepods/besteffort/podh1`), 'the v1 cgroup is removed');
    t.ok(existsSync(`${unifiedPod}/ctr`), 'a populated leaf stays (EBUSY): logged, the destroy does not fail');
    child.kill('SIGKILL');
    await exited;
    await cgroups.destroy(pod);
    t.notOk(existsSync(unifiedPod), 'gone once its process has exited');
    t.ok(existsSync(`${ROOT}/unified/${root}/kubepods/besteffort`), 'the QoS cgroup is not the pod');

    await removeHostCgroup(`/${root}`);
    t.notOk(existsSync(`${ROOT}/unified/${root}`), 'removeHostCgroup removes the unified directories too');
    t.notOk(existsSync(`${ROOT}/cpu/${root}`));
  });
}
