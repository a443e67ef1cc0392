// CgroupfsManager and PodContainerManager on the host's real cgroup2 mount: creation, cgroup.kill with
// cgroup.events, destroy, PSI. The manager's mount root is a kts-v2-test-<random> cgroup of this test's own, so it
// never writes the real root's cgroup.subtree_control; what controllers that cgroup gets is what the host's root
// enables (none on a hybrid host, where v1 holds them). Runs only where a writable cgroup2 mount exists.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CgroupfsManager, PodContainerManager } from '../src/index.js';
import { findWritableCgroup2Mount } from './cgroup2-mount.js';

const mount = findWritableCgroup2Mount();
if (typeof mount !== 'string') {
  t.comment(`no real cgroup v2 test: ${mount.reason}`);
} else {
  t.test(`CgroupfsManager v2 below ${mount}`, async (t) => {
    const root = join(mount, `kts-v2-test-${randomBytes(4).toString('hex')}`);
    await mkdir(root);
    const sleeps = new Set<ReturnType<typeof spawn>>();
    t.teardown(async () => {
      for (const child of sleeps) child.kill('SIGKILL');
      if (existsSync(join(root, 'cgroup.kill'))) await writeFile(join(root, 'cgroup.kill'), '1').catch(() => undefined);
      const manager = new CgroupfsManager({ version: 'v2', mountRoot: root });
      for (const name of ['pod1', 'pod2', 'pod3']) await manager.destroy([name]).catch(() => undefined);
      await rmdir(root).catch(() => undefined);
    });
    const startSleep = async (cgroup: string) => {
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      await once(child, 'spawn');
      sleeps.add(child);
      const exited = once(child, 'exit').then(([, signal]) => {
        sleeps.delete(child);
        return signal as string | null;
      });
      await writeFile(join(cgroup, 'cgroup.procs'), String(child.pid));
      return { pid: child.pid!, exited };
    };

    const cm = new CgroupfsManager({ version: 'v2', mountRoot: root });
    await cm.create(['pod1', 'c1'], {});
    t.ok(existsSync(join(root, 'pod1', 'c1', 'cgroup.procs')), 'made with mkdir, level by level');
    t.ok(await cm.exists(['pod1', 'c1']), 'exists: every controller the root offers is there');
    const a = await startSleep(join(root, 'pod1', 'c1'));
    t.same(await cm.pids(['pod1']), [a.pid]);
    t.match(await readFile(join(root, 'pod1', 'cgroup.events'), 'utf8'), /^populated 1$/m);
    const pressure = await cm.pressure(['pod1']);
    if (pressure === undefined) t.comment('this kernel has no PSI files');
    else t.ok(pressure.cpu && pressure.memory && pressure.io && pressure.cpu.some.total >= 0, 'cpu, memory and io pressure parsed');
    const controllers = (await readFile(join(root, 'pod1', 'cgroup.controllers'), 'utf8')).trim();
    if (controllers.split(' ').includes('memory')) t.equal((await cm.memoryEvents(['pod1']))?.oomKill, 0);
    else t.equal(await cm.memoryEvents(['pod1']), undefined, `no memory controller here ("${controllers}"): no memory events`);

    await t.rejects(cm.destroy(['pod1']), { message: /says populated 1: processes are still in the cgroup or below it/ }, 'destroy refuses while populated');
    t.equal(await cm.killAllProcesses(['pod1']), true, 'cgroup.kill');
    t.equal(await a.exited, 'SIGKILL');
    t.match(await readFile(join(root, 'pod1', 'cgroup.events'), 'utf8'), /^populated 0$/m);
    await cm.destroy(['pod1']);
    t.notOk(existsSync(join(root, 'pod1')), 'removed');

    // The pod cgroup manager's destroy: a container's processes below a pod cgroup.
    const qos = { guaranteed: [], burstable: ['burstable'], bestEffort: ['besteffort'] };
    const signalled: number[] = [];
    const pcm = new PodContainerManager({ cgroupManager: cm, qosContainersInfo: qos, killProcess: (pid) => void signalled.push(pid) });
    await cm.create(['pod2', 'ctr1']);
    await cm.create(['pod2', 'ctr2']);
    const b = await startSleep(join(root, 'pod2', 'ctr1'));
    const c = await startSleep(join(root, 'pod2', 'ctr2'));
    await pcm.destroy(['pod2']);
    t.same([await b.exited, await c.exited], ['SIGKILL', 'SIGKILL'], 'both killed through cgroup.kill');
    t.same(signalled, [], 'not one by one');
    t.notOk(existsSync(join(root, 'pod2')));
  });
}
