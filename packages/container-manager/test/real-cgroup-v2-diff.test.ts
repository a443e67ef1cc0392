// A differential test: one sequence of cgroup v2 operations run on the host's real cgroup2 mount and on FakeCgroupFs
// v2 configured like it (the root's controllers and subtree_control), comparing every step's outcome (ok or errno)
// and what was read. Runs only where a writable cgroup2 mount exists (found in /proc/self/mountinfo); elsewhere it
// says why and has no assertions. Every cgroup it makes is kts-v2-test-<random> below that mount, removed at the end.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeCgroupFs, type CgroupFs } from '../src/index.js';
import { FakeCgroupFs } from '../src/testing.js';
import { findWritableCgroup2Mount } from './cgroup2-mount.js';

interface Step {
  step: string;
  outcome: string;
}

interface Env {
  fs: CgroupFs;
  /** Starts a process (outside any of our cgroups) and returns its pid. */
  start(): Promise<number>;
  /** Resolves once the process has exited and been reaped. */
  exited(pid: number): Promise<void>;
  /** Resolves once `dir`'s cgroup.events says populated 0 (the kernel kills asynchronously). */
  drained(dir: string): Promise<void>;
}

/** The sequence. Every outcome is "ok", "ok: <what was read>" or the errno; pids and the base path are normalized. */
async function runSequence(env: Env, mount: string, base: string): Promise<Step[]> {
  const steps: Step[] = [];
  let pid = 0;
  const norm = (text: string) =>
    text
      .trim()
      .split(base)
      .join('<B>')
      .replace(pid > 0 ? new RegExp(`\\b${pid}\\b`, 'g') : /(?!)/g, '<pid>')
      .replace(/\n/g, ' | ');
  const record = async (step: string, op: () => Promise<string | void>) => {
    try {
      const value = await op();
      steps.push({ step, outcome: typeof value === 'string' ? `ok: ${norm(value)}` : 'ok' });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code !== 'string') throw err;
      steps.push({ step, outcome: code });
    }
  };
  const { fs } = env;
  const B = base;
  const exists = async (path: string) => String(await fs.exists(path));

  await record('mkdir B', () => fs.mkdir(B));
  await record('read B/cgroup.controllers', () => fs.readFile(join(B, 'cgroup.controllers')));
  await record('read B/cgroup.type', () => fs.readFile(join(B, 'cgroup.type')));
  await record('read B/cgroup.events (empty)', () => fs.readFile(join(B, 'cgroup.events')));
  for (const file of ['cgroup.kill', 'cgroup.events', 'cgroup.freeze', 'cgroup.type', 'cpu.pressure', 'memory.pressure', 'io.pressure', 'memory.max', 'memory.events', 'cpu.max', 'pids.max']) {
    await record(`exists B/${file}`, () => exists(join(B, file)));
  }
  for (const file of ['cgroup.kill', 'cgroup.events', 'cgroup.freeze', 'cgroup.type', 'cgroup.procs', 'cgroup.subtree_control']) {
    await record(`exists root/${file}`, () => exists(join(mount, file)));
  }
  await record('write B/subtree_control +hugetlb', () => fs.writeFile(join(B, 'cgroup.subtree_control'), '+hugetlb'));
  await record('write B/subtree_control +memory', () => fs.writeFile(join(B, 'cgroup.subtree_control'), '+memory'));
  await record('write B/subtree_control +nosuch', () => fs.writeFile(join(B, 'cgroup.subtree_control'), '+nosuch'));
  await record('write B/subtree_control hugetlb (no sign)', () => fs.writeFile(join(B, 'cgroup.subtree_control'), 'hugetlb'));
  await record('write B/subtree_control -hugetlb (not enabled)', () => fs.writeFile(join(B, 'cgroup.subtree_control'), '-hugetlb'));
  await record('read B/cgroup.subtree_control', () => fs.readFile(join(B, 'cgroup.subtree_control')));
  await record('mkdir B/leaf', () => fs.mkdir(join(B, 'leaf')));
  await record('mkdir B/leaf2', () => fs.mkdir(join(B, 'leaf2')));
  await record('mkdir B/leaf (again)', () => fs.mkdir(join(B, 'leaf')));
  await record('read B/leaf/cgroup.controllers', () => fs.readFile(join(B, 'leaf', 'cgroup.controllers')));
  await record('read B/cgroup.stat', async () => (await fs.readFile(join(B, 'cgroup.stat'))).split('\n').filter((l) => /^nr_(dying_)?descendants /.test(l)).join('\n'));

  pid = await env.start();
  await record('write pid to B/leaf/cgroup.procs', () => fs.writeFile(join(B, 'leaf', 'cgroup.procs'), String(pid)));
  await record('read B/leaf/cgroup.procs', () => fs.readFile(join(B, 'leaf', 'cgroup.procs')));
  await record('read B/cgroup.procs (the process is below, not in it)', () => fs.readFile(join(B, 'cgroup.procs')));
  await record('read B/cgroup.events (populated)', () => fs.readFile(join(B, 'cgroup.events')));
  await record('read B/leaf2/cgroup.events', () => fs.readFile(join(B, 'leaf2', 'cgroup.events')));
  await record('write pid to B/cgroup.procs (an inner cgroup with no controllers enabled)', () => fs.writeFile(join(B, 'cgroup.procs'), String(pid)));
  await record('read B/leaf/cgroup.procs (moved away)', () => fs.readFile(join(B, 'leaf', 'cgroup.procs')));
  await record('write B/subtree_control +hugetlb with a process of its own', () => fs.writeFile(join(B, 'cgroup.subtree_control'), '+hugetlb'));
  await record('write pid back to B/leaf/cgroup.procs', () => fs.writeFile(join(B, 'leaf', 'cgroup.procs'), String(pid)));
  await record('write B/leaf/subtree_control +hugetlb (populated leaf)', () => fs.writeFile(join(B, 'leaf', 'cgroup.subtree_control'), '+hugetlb'));
  await record('write "abc" to B/leaf/cgroup.procs', () => fs.writeFile(join(B, 'leaf', 'cgroup.procs'), 'abc'));
  await record('rmdir B/leaf (populated)', () => fs.rmdir(join(B, 'leaf')));
  await record('rmdir B (children, populated)', () => fs.rmdir(B));
  await record('rmdir B/leaf/cgroup.procs (a file)', () => fs.rmdir(join(B, 'leaf', 'cgroup.procs')));
  await record('write B/memory.max (no such file: cannot be created)', () => fs.writeFile(join(B, 'memory.max'), '1000000'));
  await record('read B/memory.max', () => fs.readFile(join(B, 'memory.max')));
  await record('write B/cgroup.events (read-only)', () => fs.writeFile(join(B, 'cgroup.events'), 'populated 0'));
  await record('read B/cgroup.kill (write-only)', () => fs.readFile(join(B, 'cgroup.kill')));
  await record('write root/cgroup.kill (the root has none)', () => fs.writeFile(join(mount, 'cgroup.kill'), '1'));
  await record('write B/cgroup.kill "2"', () => fs.writeFile(join(B, 'cgroup.kill'), '2'));
  await record('write B/cgroup.kill "0"', () => fs.writeFile(join(B, 'cgroup.kill'), '0'));
  await record('write B/cgroup.kill "x"', () => fs.writeFile(join(B, 'cgroup.kill'), 'x'));
  await record('write B/cgroup.freeze "2"', () => fs.writeFile(join(B, 'cgroup.freeze'), '2'));
  await record('write B/leaf2/cgroup.freeze "1" (empty cgroup)', () => fs.writeFile(join(B, 'leaf2', 'cgroup.freeze'), '1'));
  await record('read B/leaf2/cgroup.events (frozen)', () => fs.readFile(join(B, 'leaf2', 'cgroup.events')));
  await record('write B/leaf2/cgroup.freeze "0"', () => fs.writeFile(join(B, 'leaf2', 'cgroup.freeze'), '0'));
  await record('write B/cgroup.type "domain"', () => fs.writeFile(join(B, 'cgroup.type'), 'domain'));
  await record('write B/cgroup.max.descendants "2"', () => fs.writeFile(join(B, 'cgroup.max.descendants'), '2'));
  await record('mkdir B/third (over max.descendants)', () => fs.mkdir(join(B, 'third')));
  await record('write B/cgroup.max.descendants "max"', () => fs.writeFile(join(B, 'cgroup.max.descendants'), 'max'));
  await record('write B/cgroup.max.depth "1"', () => fs.writeFile(join(B, 'cgroup.max.depth'), '1'));
  await record('mkdir B/leaf2/deep (over max.depth)', () => fs.mkdir(join(B, 'leaf2', 'deep')));
  await record('write B/cgroup.max.depth "x"', () => fs.writeFile(join(B, 'cgroup.max.depth'), 'x'));
  await record('write B/cgroup.max.depth "max"', () => fs.writeFile(join(B, 'cgroup.max.depth'), 'max'));
  await record('read B/cpu.pressure (format)', async () => ((await fs.readFile(join(B, 'cpu.pressure'))).split('\n').filter(Boolean).every((l) => /^(some|full) avg10=\d+\.\d\d avg60=\d+\.\d\d avg300=\d+\.\d\d total=\d+$/.test(l)) ? 'kernel format' : 'other'));

  await record('write B/cgroup.kill "1"', () => fs.writeFile(join(B, 'cgroup.kill'), '1'));
  await env.drained(B);
  await env.exited(pid);
  await record('read B/cgroup.events (after cgroup.kill)', () => fs.readFile(join(B, 'cgroup.events')));
  await record('read B/leaf/cgroup.procs (after cgroup.kill)', () => fs.readFile(join(B, 'leaf', 'cgroup.procs')));
  await record('write the dead pid to B/leaf/cgroup.procs', () => fs.writeFile(join(B, 'leaf', 'cgroup.procs'), String(pid)));
  await record('rmdir B (children)', () => fs.rmdir(B));
  await record('rmdir B/leaf', () => fs.rmdir(join(B, 'leaf')));
  await record('rmdir B/leaf2', () => fs.rmdir(join(B, 'leaf2')));
  await record('rmdir B', () => fs.rmdir(B));
  await record('rmdir B (gone)', () => fs.rmdir(B));
  return steps;
}

const mount = findWritableCgroup2Mount();
if (typeof mount !== 'string') {
  t.comment(`no real cgroup v2 comparison: ${mount.reason}`);
} else {
  t.test(`the same cgroup v2 operations on the real mount ${mount} and on FakeCgroupFs`, async (t) => {
    const base = join(mount, `kts-v2-test-${randomBytes(4).toString('hex')}`);
    const children = new Map<number, ChildProcess>();
    t.teardown(async () => {
      for (const child of children.values()) child.kill('SIGKILL');
      for (const dir of [join(base, 'leaf2', 'deep'), join(base, 'third'), join(base, 'leaf'), join(base, 'leaf2'), base]) {
        await nodeCgroupFs.rmdir(dir).catch(() => undefined);
      }
    });
    const realEnv: Env = {
      fs: nodeCgroupFs,
      start: async () => {
        const child = spawn('sleep', ['60'], { stdio: 'ignore' });
        await once(child, 'spawn');
        children.set(child.pid!, child);
        return child.pid!;
      },
      exited: async (pid) => {
        const child = children.get(pid)!;
        if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
        children.delete(pid);
      },
      drained: async (dir) => {
        // Bounded: SIGKILLed sleeps exit within milliseconds; 5 s is a hang, not a slow machine.
        for (let i = 0; i < 500; i++) {
          if (/^populated 0$/m.test(readFileSync(join(dir, 'cgroup.events'), 'utf8'))) return;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        throw new Error(`${dir} still populated 5 s after cgroup.kill`);
      },
    };
    const real = await runSequence(realEnv, mount, base);

    const words = (file: string) => readFileSync(join(mount, file), 'utf8').trim().split(/\s+/).filter(Boolean);
    const fake = new FakeCgroupFs({ version: 'v2', root: mount, controllers: words('cgroup.controllers'), rootSubtreeControl: words('cgroup.subtree_control') });
    const fakeEnv: Env = {
      fs: fake,
      // Any pid: the fake knows no processes but the ones written to it, and reads are normalized to <pid>.
      start: async () => 4_000_000,
      exited: async () => {},
      drained: async () => {},
    };
    const simulated = await runSequence(fakeEnv, mount, base);

    t.comment(`real mount: cgroup.controllers "${words('cgroup.controllers').join(' ')}", subtree_control "${words('cgroup.subtree_control').join(' ')}"`);
    t.equal(simulated.length, real.length, 'the same number of steps');
    for (let i = 0; i < real.length; i++) t.equal(simulated[i]?.outcome, real[i].outcome, `${real[i].step}: ${real[i].outcome}`);
  });
}
