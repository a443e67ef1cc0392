import t, { type Test } from 'tap';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MountHelper, type MountHelperSpawn } from '../src/mount-helper.js';
import { SystemMounter, type CommandRunner } from '../src/mounter.js';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-mount-helper-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Spawns through child_process.spawn and counts the processes started. */
function countingSpawn(): { spawn: MountHelperSpawn; count: () => number } {
  let n = 0;
  return {
    spawn: (file, args) => {
      n++;
      return spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    },
    count: () => n,
  };
}

/**
 * A stand-in helper (node, speaking the helper's protocol) that logs each decoded request to a file
 * and makes no call: success, errno 1 for a target ending in `fail`, an exit for one ending in `die`.
 */
function fakeHelper(log: string): { spawn: MountHelperSpawn; count: () => number } {
  const script = `
    const fs = require('node:fs');
    process.stdout.write('ready ' + process.pid + '\\n');
    require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
      const [id, op, ...args] = line.split(' ');
      const decoded = args.map((a, i) => (op === 'mount' && i === 3) || (op === 'umount' && i === 1) ? parseInt(a, 16) : a === '-' ? null : Buffer.from(a, 'hex').toString());
      fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify([op, ...decoded]) + '\\n');
      const target = op === 'mount' ? decoded[1] : decoded[0];
      if (target.endsWith('die')) process.exit(9);
      process.stdout.write(id + ' ' + (target.endsWith('fail') ? 1 : 0) + '\\n');
    });`;
  let n = 0;
  return {
    spawn: () => {
      n++;
      return spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    },
    count: () => n,
  };
}

async function logged(log: string): Promise<unknown[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

function recordingRunner(): { run: CommandRunner; calls: Array<[string, string[]]> } {
  const calls: Array<[string, string[]]> = [];
  return { run: async (file, args) => (calls.push([file, args]), { stdout: '', stderr: '' }), calls };
}

function exited(pid: number): Promise<void> {
  return new Promise((resolve) => {
    const poll = (): void => {
      try {
        process.kill(pid, 0);
        setTimeout(poll, 10);
      } catch {
        resolve();
      }
    };
    poll();
  });
}

t.test('one perl helper answers many calls, any path passes the protocol', { skip: process.platform !== 'linux' }, async (t) => {
  const dir = await tempDir(t);
  const counter = countingSpawn();
  const helper = new MountHelper({ spawn: counter.spawn });
  t.teardown(() => helper.close());
  const names = Array.from({ length: 40 }, (_, i) => join(dir, `missing ${i}\n\t\\ é`));
  const results = await Promise.all(names.map((n) => helper.umount(n)));
  t.equal(counter.count(), 1, 'one process for 40 calls');
  for (const r of results) t.ok(r.code === 'ENOENT' || r.code === 'EPERM', `umount2 of a missing path fails: ${r.code}`);
  t.equal(results[0].errno, results[0].code === 'ENOENT' ? 2 : 1);
});

t.test('SystemMounter mounts through one helper: no process per volume', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  const log = join(dir, 'requests');
  await writeFile(info, '');
  const fake = fakeHelper(log);
  const runner = recordingRunner();
  const m = new SystemMounter({ mountInfoPath: info, run: runner.run, helper: new MountHelper({ spawn: fake.spawn }) });
  t.teardown(() => m.close());
  await Promise.all(Array.from({ length: 110 }, (_, i) => m.mountTmpfs(`/pods/u${i}/vol`, i % 2 ? { sizeBytes: 1048576 } : {})));
  await m.bindMount('/proc/1/fd/7', '/pods/u0/sub path');
  t.equal(fake.count(), 1, 'one helper for 111 mounts');
  t.same(runner.calls, [], 'no mount(8)');
  const requests = await logged(log);
  t.equal(requests.length, 111);
  t.same(requests[0], ['mount', 'tmpfs', '/pods/u0/vol', 'tmpfs', 0, null], 'mount -t tmpfs tmpfs <target>: no data without a size');
  t.same(requests[1], ['mount', 'tmpfs', '/pods/u1/vol', 'tmpfs', 0, 'size=1048576'], 'mount -t tmpfs -o size=N');
  t.same(requests[110], ['mount', '/proc/1/fd/7', '/pods/u0/sub path', null, 0x1000, null], 'MS_BIND, no fstype');

  await writeFile(info, '60 26 0:60 / /pods/u0/vol rw - tmpfs tmpfs rw\n');
  await m.unmount('/pods/u0/vol');
  await m.unmount('/pods/u1/vol');
  t.same((await logged(log)).slice(111), [['umount', '/pods/u0/vol', 0]], 'umount2 of what is mounted only');
  t.equal(fake.count(), 1);
  t.same(runner.calls, []);
});

t.test('a call the helper fails runs mount(8), whose error is reported as before', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, '61 26 0:61 / /x/fail rw - tmpfs tmpfs rw\n');
  const calls: Array<[string, string[]]> = [];
  const run: CommandRunner = async (file, args) => {
    calls.push([file, args]);
    throw Object.assign(new Error('Command failed'), { code: 32, stderr: 'mount: /x/fail: permission denied.\n', stdout: '' });
  };
  const m = new SystemMounter({ mountInfoPath: info, run, helper: new MountHelper({ spawn: fakeHelper(join(dir, 'log')).spawn }) });
  t.teardown(() => m.close());
  const err = (await m.mountTmpfs('/x/fail', { sizeBytes: 1024 }).catch((e: Error) => e)) as Error & { code?: unknown };
  t.same(calls, [['mount', ['-t', 'tmpfs', '-o', 'size=1024', 'tmpfs', '/x/fail']]]);
  t.match(err.message, /^mounting tmpfs at \/x\/fail is not permitted for this user or host/);
  t.match(err.message, 'mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t tmpfs -o size=1024 tmpfs /x/fail\nOutput: mount: /x/fail: permission denied.');
  t.equal(err.code, 'EPERM');
  const umountErr = (await m.unmount('/x/fail').catch((e: Error) => e)) as Error;
  t.same(calls[1], ['umount', ['/x/fail']]);
  t.match(umountErr.message, /^unmount failed: exit status 32\nUnmounting arguments: \/x\/fail\nOutput: mount: \/x\/fail: permission denied/);
});

t.test('a helper that dies is restarted; a call it took with it fails without a retry', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  const log = join(dir, 'log');
  await writeFile(info, '');
  const fake = fakeHelper(log);
  const runner = recordingRunner();
  const helper = new MountHelper({ spawn: fake.spawn });
  const m = new SystemMounter({ mountInfoPath: info, run: runner.run, helper });
  t.teardown(() => m.close());
  await m.mountTmpfs('/p/a');
  const first = helper.pid!;
  const err = (await m.mountTmpfs('/p/die').catch((e: Error) => e)) as Error;
  t.match(err.message, /^mount failed: the mount helper \(perl, pid \d+\) exited before answering: exit status 9\nMounting command: mount\nMounting arguments: -t tmpfs tmpfs \/p\/die\nOutput: $/);
  t.same(runner.calls, [], 'not mounted again through mount(8): the first call may have been made');
  await m.mountTmpfs('/p/b');
  t.equal(fake.count(), 2, 'a new helper');
  t.not(helper.pid, first);
  process.kill(helper.pid!, 'SIGKILL');
  await exited(helper.pid!);
  await m.mountTmpfs('/p/c');
  t.equal(fake.count(), 3, 'killed while idle: the next call starts another');
  t.same(runner.calls, []);
  t.same((await logged(log)).map((r) => (r as string[])[2]), ['/p/a', '/p/die', '/p/b', '/p/c']);
});

t.test('without a helper (no perl, unknown architecture) mount(8) and umount(8) run', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, '62 26 0:62 / /q/a rw - tmpfs tmpfs rw\n');
  for (const [what, opts] of [
    ['no perl', { perl: join(dir, 'no-such-perl') }],
    ['a perl that declines', { perl: process.execPath }], // node exits on perl's arguments without `ready`
    ['an architecture without numbers', { arch: 'sparc64' }],
  ] as const) {
    const counter = countingSpawn();
    const helper = new MountHelper({ ...opts, spawn: counter.spawn });
    const runner = recordingRunner();
    const m = new SystemMounter({ mountInfoPath: info, run: runner.run, helper });
    await m.mountTmpfs('/q/a', { sizeBytes: 4096 });
    await m.mountTmpfs('/q/b');
    await m.unmount('/q/a');
    m.close();
    t.same(
      runner.calls,
      [
        ['mount', ['-t', 'tmpfs', '-o', 'size=4096', 'tmpfs', '/q/a']],
        ['mount', ['-t', 'tmpfs', 'tmpfs', '/q/b']],
        ['umount', ['/q/a']],
      ],
      what,
    );
    t.ok(counter.count() <= 1, `${what}: tried once at most, not per call (${counter.count()})`);
    await t.rejects(helper.umount('/q/a'), { name: 'MountHelperUnavailableError' });
  }
  const runner = recordingRunner();
  const m = new SystemMounter({ mountInfoPath: info, run: runner.run, helper: false });
  await m.mountTmpfs('/q/c');
  t.same(runner.calls, [['mount', ['-t', 'tmpfs', 'tmpfs', '/q/c']]], 'helper: false');
});

t.test('close ends the helper, and an idle helper does not keep the process alive', { skip: process.platform !== 'linux' }, async (t) => {
  const helper = new MountHelper();
  await helper.umount('/nonexistent/path');
  const pid = helper.pid!;
  helper.close();
  await exited(pid);
  t.pass('closed helper exited');
  await t.rejects(helper.umount('/x'), { name: 'MountHelperUnavailableError' });

  // A process that used the helper and has nothing else to do exits, and its helper with it.
  const src = new URL('../src/mount-helper.ts', import.meta.url).pathname;
  const script = `import { MountHelper } from ${JSON.stringify(src)}; const h = new MountHelper(); await h.umount('/nonexistent/path'); process.stdout.write(String(h.pid));`; // not console.log: FORCE_COLOR (set under a terminal) colours a number
  const tsx = new URL('../../../node_modules/.bin/tsx', import.meta.url).pathname;
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(tsx, ['--input-type=module', '-e', script], { timeout: 60_000 }, (err, out) => (err ? reject(err) : resolve(out))),
  );
  const childHelper = Number(stdout.trim());
  t.ok(childHelper > 0, 'the child used a helper');
  await exited(childHelper);
  t.pass('the child exited by itself and its helper went with it');
});

const notRoot = process.getuid?.() !== 0 ? 'mounting tmpfs needs root' : false;

t.test('real tmpfs mounts through the helper look as mount(8) made them', { skip: notRoot }, async (t) => {
  const dir = await tempDir(t);
  const counter = countingSpawn();
  const runner = recordingRunner();
  const m = new SystemMounter({ run: runner.run, helper: new MountHelper({ spawn: counter.spawn }) });
  const byCommand = new SystemMounter({ helper: false });
  const targets = Array.from({ length: 10 }, (_, i) => join(dir, `vol ${i}`));
  for (const target of [...targets, join(dir, 'ref')]) await mkdir(target);
  t.teardown(async () => {
    for (const target of await byCommand.mountPointsUnder(dir)) await byCommand.unmount(target).catch(() => undefined);
    m.close();
  });
  await Promise.all(targets.map((target) => m.mountTmpfs(target, { sizeBytes: 2 * 1024 * 1024 })));
  await byCommand.mountTmpfs(join(dir, 'ref'), { sizeBytes: 2 * 1024 * 1024 });
  const entries = await m.entries();
  const ref = entries.find((e) => e.mountPoint === join(dir, 'ref'))!;
  for (const target of targets) {
    const e = entries.find((x) => x.mountPoint === target);
    t.match(e, { fsType: ref.fsType, source: ref.source, options: ref.options, superOptions: ref.superOptions, root: ref.root, parentId: ref.parentId }, target);
  }
  t.ok(ref.superOptions.includes('size=2048k'));
  await writeFile(join(targets[0], 'f'), 'data');
  t.same((await m.mountPointsUnder(dir)).sort(), [...targets, join(dir, 'ref')].sort());
  await Promise.all(targets.map((target) => m.unmount(target)));
  t.same(await m.mountPointsUnder(dir), [join(dir, 'ref')]);
  await t.rejects(readFile(join(targets[0], 'f')), { code: 'ENOENT' });
  // A bind mount through the helper (as a subPath's).
  await writeFile(join(dir, 'ref', 'file'), 'x');
  await writeFile(join(dir, 'bind-target'), '');
  await m.bindMount(join(dir, 'ref', 'file'), join(dir, 'bind-target'));
  t.equal(await readFile(join(dir, 'bind-target'), 'utf8'), 'x');
  t.equal(await m.isMountPoint(join(dir, 'bind-target')), true);
  await m.unmount(join(dir, 'bind-target'));
  t.equal(await m.isMountPoint(join(dir, 'bind-target')), false);
  t.equal(counter.count(), 1, 'one helper process');
  t.same(runner.calls, [], 'no mount(8), no umount(8)');
  // A failing call: mount(8)'s error, as before.
  const failing = new SystemMounter({ helper: new MountHelper() });
  t.teardown(() => failing.close());
  const err = (await failing.mountTmpfs(join(dir, 'missing')).catch((e: Error) => e)) as Error;
  t.match(err.message, `mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t tmpfs tmpfs ${join(dir, 'missing')}\nOutput: mount: ${join(dir, 'missing')}: mount point does not exist.`);
});

t.test('mount table questions asked during a read share the next read, which starts after them', { skip: process.platform !== 'linux' }, async (t) => {
  const dir = await tempDir(t);
  const fifo = join(dir, 'mountinfo');
  execFileSync('mkfifo', [fifo]);
  const m = new SystemMounter({ mountInfoPath: fifo, helper: false });
  // A reads: the read blocks on the FIFO until a table is written.
  const a = m.isMountPoint('/m/x');
  await new Promise((resolve) => setTimeout(resolve, 20));
  // B and C ask while A's read is under way; /m/x is mounted after A's read began.
  const b = m.isMountPoint('/m/x');
  const c = m.mountPointsUnder('/m');
  await writeFile(fifo, '');
  t.equal(await a, false, "A's read: the old table");
  await writeFile(fifo, '70 26 0:70 / /m/x rw - tmpfs tmpfs rw\n');
  t.equal(await b, true, 'B sees the mount made after the read under way began');
  t.same(await c, ['/m/x']);
  t.equal(m.tableReads, 2, 'B and C shared one read');
  const d = m.isMountPoint('/m/x');
  await writeFile(fifo, '');
  t.equal(await d, false, 'nothing kept: the next question reads again');
  t.equal(m.tableReads, 3);
});

t.test('many concurrent questions read the table a few times, not once each', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, Array.from({ length: 300 }, (_, i) => `${100 + i} 26 0:${100 + i} / /pods/u${i}/vol rw - tmpfs tmpfs rw`).join('\n') + '\n');
  const m = new SystemMounter({ mountInfoPath: info, helper: false });
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => m.isMountPoint(`/pods/u${i % 150 * 2}/vol`)));
  t.ok(answers.every((x) => x));
  t.same(await Promise.all([m.isMountPoint('/pods/u300/vol'), m.isMountPoint('/pods/u299/vol')]), [false, true]);
  t.ok(m.tableReads <= 4, `${m.tableReads} reads for 202 questions`);
});
