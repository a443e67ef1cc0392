// FakeCgroupFs v2 refuses what the kernel refuses (kernel/cgroup/cgroup.c; the errno of the steps a real cgroup2
// mount allows are checked against it by real-cgroup-v2-diff.test.ts, the controller rules here need controllers
// that mount does not give).
import t from 'tap';
import { FakeCgroupFs } from '../src/testing.js';
import { CG } from './helpers.js';

const write = (fs: FakeCgroupFs, path: string, data: string) => fs.writeFile(`${CG}/${path}`, data);

t.test('delegation: a child has what its parent enables; +c needs c, -c waits for the children', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['cpu', 'memory', 'pids', 'hugetlb'] });
  t.equal(fs.read(`${CG}/cgroup.controllers`), 'cpu memory hugetlb pids', 'in the kernel\'s order');
  t.notOk(fs.read(`${CG}/memory.max`), 'the root has no memory.max');
  t.equal(fs.read(`${CG}/memory.stat`), '', 'but memory.stat');
  await fs.mkdir(`${CG}/a`);
  await fs.mkdir(`${CG}/a/b`);
  await t.rejects(write(fs, 'a/cgroup.subtree_control', '+memory'), { code: 'ENOENT' }, 'a does not have memory yet');
  await t.rejects(write(fs, 'cgroup.subtree_control', '+io'), { code: 'ENOENT' }, 'a known controller the root does not have');
  await t.rejects(write(fs, 'cgroup.subtree_control', '+memory +nosuch'), { code: 'EINVAL' }, 'an unknown one fails the whole write');
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), '', 'nothing applied');
  await write(fs, 'cgroup.subtree_control', '+pids +memory +hugetlb');
  t.equal(fs.read(`${CG}/cgroup.subtree_control`), 'memory hugetlb pids');
  t.equal(fs.read(`${CG}/a/cgroup.controllers`), 'memory hugetlb pids');
  t.equal(fs.read(`${CG}/a/memory.max`), 'max');
  t.equal(fs.read(`${CG}/a/hugetlb.2MB.max`), 'max');
  t.equal(fs.read(`${CG}/a/b/cgroup.controllers`), '', 'b only gets what a enables');
  await write(fs, 'a/cgroup.subtree_control', '+memory');
  t.equal(fs.read(`${CG}/a/b/memory.max`), 'max');
  await t.rejects(write(fs, 'cgroup.subtree_control', '-memory'), { code: 'EBUSY' }, 'a enables memory for its children');
  await write(fs, 'cgroup.subtree_control', '-pids');
  t.notOk(await fs.exists(`${CG}/a/pids.max`), 'the files go with the controller');
  await write(fs, 'a/cgroup.subtree_control', '-memory');
  await write(fs, 'cgroup.subtree_control', '-memory');
  t.notOk(await fs.exists(`${CG}/a/memory.max`));
  t.notOk(await fs.exists(`${CG}/a/memory.events`));
});

t.test('no internal processes', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['cpu', 'memory', 'pids'], rootSubtreeControl: ['cpu', 'memory', 'pids'] });
  await fs.mkdir(`${CG}/a`);
  await fs.mkdir(`${CG}/a/leaf`);
  await write(fs, 'a/cgroup.procs', '100');
  await t.rejects(write(fs, 'a/cgroup.subtree_control', '+memory'), { code: 'EBUSY' }, 'a domain controller in a cgroup with processes');
  await write(fs, 'a/cgroup.subtree_control', '+pids');
  t.equal(fs.read(`${CG}/a/cgroup.subtree_control`), 'pids', 'thread-aware controllers may be enabled while it could be a thread root');
  await write(fs, 'a/leaf/cgroup.procs', '100');
  t.same(fs.processes(`${CG}/a`), [], 'a process is in one cgroup at a time');
  await t.rejects(write(fs, 'a/cgroup.procs', '101'), { code: 'EBUSY' }, 'a populated child and controllers enabled: no processes in a');
  await write(fs, 'a/cgroup.subtree_control', '+memory');
  t.throws(() => fs.addProcess(`${CG}/a`, 7), { code: 'EBUSY' }, 'addProcess follows the same rule');
  await write(fs, 'cgroup.procs', '101');
  t.same(fs.processes(CG), [101], 'the root may hold processes');
  await t.rejects(write(fs, 'a/leaf/cgroup.procs', '-1'), { code: 'EINVAL' });
  fs.removeProcess(101);
  await t.rejects(write(fs, 'a/leaf/cgroup.procs', '101'), { code: 'ESRCH' }, 'an exited process');
});

t.test('rmdir, cgroup.events, cgroup.kill, cgroup.stat', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['memory'], rootSubtreeControl: ['memory'] });
  await fs.mkdir(`${CG}/a`);
  await fs.mkdir(`${CG}/a/b`);
  await fs.mkdir(`${CG}/a/c`);
  fs.addProcess(`${CG}/a/b`, 10);
  fs.addProcess(`${CG}/a/b`, 11);
  fs.addProcess(`${CG}/a/c`, 12);
  t.equal(await fs.readFile(`${CG}/a/cgroup.events`), 'populated 1\nfrozen 0\n');
  t.equal(await fs.readFile(`${CG}/a/cgroup.stat`), 'nr_descendants 2\nnr_dying_descendants 0\n');
  await t.rejects(fs.rmdir(`${CG}/a/b`), { code: 'EBUSY' });
  await t.rejects(fs.readFile(`${CG}/cgroup.kill`), { code: 'ENOENT' }, 'not on the root');
  await t.rejects(fs.readFile(`${CG}/a/cgroup.kill`), { code: 'EINVAL' }, 'write-only');
  fs.holdKilled = true;
  await write(fs, 'a/b/cgroup.kill', '1');
  t.same(fs.killed, [10, 11]);
  t.equal(await fs.readFile(`${CG}/a/b/cgroup.events`), 'populated 1\nfrozen 0\n', 'killed, not yet exited');
  fs.releaseKilled();
  t.equal(await fs.readFile(`${CG}/a/b/cgroup.events`), 'populated 0\nfrozen 0\n');
  t.equal(await fs.readFile(`${CG}/a/cgroup.events`), 'populated 1\nfrozen 0\n', 'c still has one');
  fs.holdKilled = false;
  await write(fs, 'a/cgroup.kill', '1');
  t.same(fs.killed, [10, 11, 12]);
  t.equal(await fs.readFile(`${CG}/a/cgroup.events`), 'populated 0\nfrozen 0\n');
  await write(fs, 'a/cgroup.freeze', '1');
  t.equal(await fs.readFile(`${CG}/a/c/cgroup.events`), 'populated 0\nfrozen 1\n', 'frozen below a frozen cgroup');
  await fs.rmdir(`${CG}/a/b`);
  await fs.rmdir(`${CG}/a/c`);
  await fs.rmdir(`${CG}/a`);
  t.notOk(fs.isDir(`${CG}/a`));
});

t.test('interface file values as the kernel takes them', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['cpu', 'memory', 'pids', 'hugetlb'], rootSubtreeControl: ['cpu', 'memory', 'pids', 'hugetlb'] });
  await fs.mkdir(`${CG}/a`);
  await write(fs, 'a/memory.max', '1000000');
  t.equal(fs.read(`${CG}/a/memory.max`), '999424', 'rounded down to a page');
  await write(fs, 'a/memory.max', '1G');
  t.equal(fs.read(`${CG}/a/memory.max`), String(2 ** 30));
  await t.rejects(write(fs, 'a/memory.max', '-1'), { code: 'EINVAL' });
  await t.rejects(write(fs, 'a/cpu.weight', '0'), { code: 'ERANGE' });
  await t.rejects(write(fs, 'a/cpu.weight', 'x'), { code: 'EINVAL' });
  await write(fs, 'a/cpu.max', '50000 100000');
  await write(fs, 'a/cpu.max', 'max');
  t.equal(fs.read(`${CG}/a/cpu.max`), 'max 100000', 'the period is kept');
  await t.rejects(write(fs, 'a/cpu.max', '500 100000'), { code: 'EINVAL' }, 'a quota under 1 ms');
  await t.rejects(write(fs, 'a/cpu.max', 'max 2000000'), { code: 'EINVAL' }, 'a period over 1 s');
  await t.rejects(write(fs, 'a/pids.max', '-1'), { code: 'EINVAL' });
  await write(fs, 'a/hugetlb.2MB.max', '5000000');
  t.equal(fs.read(`${CG}/a/hugetlb.2MB.max`), String(2 * 2 ** 21), 'whole huge pages');
  await t.rejects(write(fs, 'a/memory.current', '0'), { code: 'EINVAL' }, 'read-only');
  await t.rejects(write(fs, 'a/cgroup.type', 'domain'), { code: 'EINVAL' });
  await t.rejects(write(fs, 'a/cgroup.type', 'threaded'), { message: /threaded cgroups are not modelled/ });
  await write(fs, 'a/cpu.pressure', 'some 150000 1000000');
  await t.rejects(write(fs, 'a/cpu.pressure', 'bad'), { code: 'EINVAL' });
  t.equal(await fs.readFile(`${CG}/a/memory.pressure`), 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n');
  const noPsi = new FakeCgroupFs({ version: 'v2', psi: false, cgroupKill: false });
  await noPsi.mkdir(`${CG}/a`);
  t.notOk(await noPsi.exists(`${CG}/a/cpu.pressure`), 'a kernel without PSI');
  t.notOk(await noPsi.exists(`${CG}/a/cgroup.kill`), 'a kernel before 5.14');
  t.throws(() => new FakeCgroupFs({ version: 'v2', controllers: ['cpu', 'blkio'] }), { message: /unknown cgroup v2 controllers blkio/ });
});

t.test('simulateOomKill counts memory.events as the kernel does', async (t) => {
  const fs = new FakeCgroupFs({ version: 'v2', controllers: ['memory'], rootSubtreeControl: ['memory'] });
  await fs.mkdir(`${CG}/pod`);
  await write(fs, 'pod/cgroup.subtree_control', '+memory');
  await fs.mkdir(`${CG}/pod/c1`);
  await fs.mkdir(`${CG}/pod/c2`);
  fs.addProcess(`${CG}/pod/c1`, 1);
  fs.addProcess(`${CG}/pod/c1`, 2);
  fs.addProcess(`${CG}/pod/c2`, 3);
  t.same(fs.simulateOomKill(`${CG}/pod/c1`, 2), [2]);
  t.equal(await fs.readFile(`${CG}/pod/c1/memory.events`), 'low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\noom_group_kill 0\n');
  t.equal(await fs.readFile(`${CG}/pod/memory.events`), 'low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\noom_group_kill 0\n', 'hierarchical');
  t.equal(await fs.readFile(`${CG}/pod/memory.events.local`), 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n');
  await write(fs, 'pod/memory.oom.group', '1');
  t.same(fs.simulateOomKill(`${CG}/pod`).sort(), [1, 3], 'the whole group');
  t.match(await fs.readFile(`${CG}/pod/memory.events`), /oom 2\noom_kill 3\noom_group_kill 1/);
  t.throws(() => fs.simulateOomKill(`${CG}/pod`), { message: /no process below/ });
  const v1 = new FakeCgroupFs({ version: 'v1', subsystems: ['memory'] });
  v1.mkdirp(`${CG}/memory/pod/c1`);
  v1.addProcess(`${CG}/memory/pod/c1`, 5);
  v1.simulateOomKill(`${CG}/memory/pod`);
  t.equal(v1.read(`${CG}/memory/pod/c1/memory.oom_control`), 'oom_kill_disable 0\nunder_oom 0\noom_kill 1', 'v1: the victim\'s cgroup only');
  t.match(v1.read(`${CG}/memory/pod/memory.oom_control`), /oom_kill 0$/);
});
