import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMountInfo, pathWithinBase, SystemMounter, unescapeMountInfoField, type CommandRunner } from '../src/mounter.js';
import { FakeMounter } from '../src/testing-mounter.js';

const sample = [
  '21 26 0:20 / /proc rw,relatime - proc proc rw',
  '24 23 0:22 / /dev/shm rw,relatime shared:4 - tmpfs tmpfs rw,size=24683620k',
  '40 26 0:40 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache rw,relatime - tmpfs tmpfs rw,size=1024k',
  '41 40 0:41 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache/inner rw - tmpfs tmpfs rw',
  '42 26 0:42 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/my\\040vol rw master:1 propagate_from:2 - tmpfs tmp\\040fs rw',
  '43 26 8:1 /sub\\134dir /var/lib/kubelet/pods/u10/x rw - ext4 /dev/sda1 rw',
  'garbage line',
  '',
].join('\n');

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-mounter-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('parseMountInfo reads every field and undoes the octal escapes', async (t) => {
  const entries = parseMountInfo(sample);
  t.equal(entries.length, 6, 'malformed and empty lines are skipped');
  t.match(entries[1], {
    id: 24,
    parentId: 23,
    majorMinor: '0:22',
    root: '/',
    mountPoint: '/dev/shm',
    options: ['rw', 'relatime'],
    optionalFields: ['shared:4'],
    fsType: 'tmpfs',
    source: 'tmpfs',
    superOptions: ['rw', 'size=24683620k'],
  });
  t.equal(entries[4].mountPoint, '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/my vol');
  t.same(entries[4].optionalFields, ['master:1', 'propagate_from:2']);
  t.equal(entries[4].source, 'tmp fs');
  t.equal(entries[5].root, '/sub\\dir');
  t.equal(unescapeMountInfoField('a\\011b\\012c\\134d'), 'a\tb\nc\\d');
});

t.test('pathWithinBase compares whole path elements', async (t) => {
  t.ok(pathWithinBase('/a/b', '/a/b'));
  t.ok(pathWithinBase('/a/b/c', '/a/b'));
  t.notOk(pathWithinBase('/a/bc', '/a/b'));
  t.notOk(pathWithinBase('/a', '/a/b'));
  t.notOk(pathWithinBase('/a/b/../c', '/a/b'));
  t.ok(pathWithinBase('/a/..b', '/a'), 'a name starting with .. is not a backstep');
});

t.test('SystemMounter answers from an injected mountinfo file', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, sample);
  const m = new SystemMounter({ mountInfoPath: info });
  const base = '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir';
  t.equal(await m.isMountPoint(`${base}/cache`), true);
  t.equal(await m.isMountPoint(`${base}/cache/`), true, 'a trailing slash is the same path');
  t.equal(await m.isMountPoint(`${base}/my vol`), true, 'escaped names match');
  t.equal(await m.isMountPoint(base), false);
  t.same(await m.mountPointsUnder('/var/lib/kubelet/pods/u1'), [`${base}/cache/inner`, `${base}/my vol`, `${base}/cache`], 'deepest first');
  t.same(await m.mountPointsUnder(`${base}/cache`), [`${base}/cache/inner`, `${base}/cache`], 'the prefix itself counts');
  t.same(await m.mountPointsUnder('/var/lib/kubelet/pods/u'), [], 'u is not a parent of u1');
  t.same(await m.mountPointsUnder('/var/lib/kubelet/pods/u10'), ['/var/lib/kubelet/pods/u10/x']);
});

t.test('SystemMounter reports mounts under a symlinked prefix as the caller spelled it', async (t) => {
  const dir = await tempDir(t);
  await mkdir(join(dir, 'real', 'v'), { recursive: true });
  await symlink(join(dir, 'real'), join(dir, 'link'));
  const info = join(dir, 'mountinfo');
  await writeFile(info, `50 26 0:50 / ${join(dir, 'real', 'v')} rw - tmpfs tmpfs rw\n`);
  const m = new SystemMounter({ mountInfoPath: info });
  t.equal(await m.isMountPoint(join(dir, 'link', 'v')), true);
  t.same(await m.mountPointsUnder(join(dir, 'link')), [join(dir, 'link', 'v')]);
});

t.test('SystemMounter.mountTmpfs runs mount with a size option and explains failures', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, '');
  const calls: Array<[string, string[]]> = [];
  let failure: (Error & { code?: number | string; stderr?: string; stdout?: string }) | undefined;
  const run: CommandRunner = async (file, args) => {
    calls.push([file, args]);
    if (failure) throw failure;
    return { stdout: '', stderr: '' };
  };
  const m = new SystemMounter({ mountInfoPath: info, run, helper: false });

  await m.mountTmpfs('/x/vol', { sizeBytes: 1048576 });
  await m.mountTmpfs('/x/vol2');
  t.same(calls, [
    ['mount', ['-t', 'tmpfs', '-o', 'size=1048576', 'tmpfs', '/x/vol']],
    ['mount', ['-t', 'tmpfs', 'tmpfs', '/x/vol2']],
  ]);

  failure = Object.assign(new Error('Command failed'), { code: 32, stderr: 'mount: /x/vol: permission denied.\n', stdout: '' });
  const denied = await m.mountTmpfs('/x/vol', { sizeBytes: 1024 }).catch((e: Error) => e);
  t.type(denied, Error);
  t.match((denied as Error).message, /^mounting tmpfs at \/x\/vol is not permitted for this user or host/);
  t.match((denied as Error).message, 'mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t tmpfs -o size=1024 tmpfs /x/vol\nOutput: mount: /x/vol: permission denied.');
  t.equal((denied as { code?: unknown }).code, 'EPERM');

  failure = Object.assign(new Error('Command failed'), { code: 32, stderr: 'mount: /x/vol: mount point does not exist.\n' });
  const missing = (await m.mountTmpfs('/x/vol').catch((e: Error) => e)) as Error;
  t.equal(missing.message, 'mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t tmpfs tmpfs /x/vol\nOutput: mount: /x/vol: mount point does not exist.\n');

  failure = Object.assign(new Error('spawn mount ENOENT'), { code: 'ENOENT' });
  const noBinary = (await m.mountTmpfs('/x/vol').catch((e: Error) => e)) as Error;
  t.match(noBinary.message, 'mount failed: exec: "mount": executable file not found in $PATH');
});

t.test('SystemMounter.unmount is a no-op for a path that is not mounted', async (t) => {
  const dir = await tempDir(t);
  const info = join(dir, 'mountinfo');
  await writeFile(info, '60 26 0:60 / /m/a rw - tmpfs tmpfs rw\n');
  const calls: Array<[string, string[]]> = [];
  const m = new SystemMounter({ mountInfoPath: info, helper: false, run: async (file, args) => (calls.push([file, args]), { stdout: '', stderr: '' }) });
  await m.unmount('/m/b');
  t.same(calls, []);
  await m.unmount('/m/a');
  t.same(calls, [['umount', ['/m/a']]]);
});

const notRoot = process.getuid?.() !== 0 ? 'mounting tmpfs needs root' : false;

t.test('a real tmpfs mount and unmount', { skip: notRoot }, async (t) => {
  const dir = await tempDir(t);
  const target = join(dir, 'mnt point');
  await mkdir(target);
  const m = new SystemMounter();
  await m.mountTmpfs(target, { sizeBytes: 2 * 1024 * 1024 });
  t.teardown(async () => {
    await m.unmount(target).catch(() => undefined);
    m.close();
  });
  t.equal(await m.isMountPoint(target), true);
  const entry = (await m.entries()).find((e) => e.mountPoint === target);
  t.equal(entry?.fsType, 'tmpfs');
  t.ok(entry?.superOptions.includes('size=2048k'), `size option applied: ${entry?.superOptions.join(',')}`);
  await writeFile(join(target, 'f'), 'data');
  t.same(await m.mountPointsUnder(dir), [target]);
  await m.unmount(target);
  t.equal(await m.isMountPoint(target), false);
  await t.rejects(readFile(join(target, 'f')), { code: 'ENOENT' }, 'the tmpfs contents went with the mount');
  await m.unmount(target);
  t.pass('a second unmount is not an error');
});

t.test('FakeMounter keeps a mount table, records calls and fails on demand', async (t) => {
  const m = new FakeMounter(['/pods/u/old']);
  t.equal(await m.isMountPoint('/pods/u/old'), true, 'initial mounts');
  await m.mountTmpfs('/pods/u/a', { sizeBytes: 10 });
  await m.mountTmpfs('/pods/u/a/b');
  t.same(await m.mountPointsUnder('/pods/u'), ['/pods/u/a/b', '/pods/u/old', '/pods/u/a']);
  t.same(m.callsOf('mountTmpfs'), [
    { op: 'mountTmpfs', target: '/pods/u/a', sizeBytes: 10 },
    { op: 'mountTmpfs', target: '/pods/u/a/b' },
  ]);
  await m.mountTmpfs('/pods/u/a');
  t.equal(m.mounts.filter((x) => x.target === '/pods/u/a').length, 2, 'a second mount stacks');
  await m.unmount('/pods/u/a');
  t.equal(await m.isMountPoint('/pods/u/a'), true, 'one unmount removes the top mount only');
  await m.unmount('/pods/u/a');
  t.equal(await m.isMountPoint('/pods/u/a'), false);
  await m.unmount('/pods/u/never');
  t.pass('unmounting what is not mounted is fine');

  m.failNext('mountTmpfs', new Error('mount failed: permission denied'));
  await t.rejects(m.mountTmpfs('/pods/u/c'), { message: 'mount failed: permission denied' });
  t.equal(m.isMounted('/pods/u/c'), false, 'a failed mount leaves no entry');
  await m.mountTmpfs('/pods/u/c');
  t.equal(m.isMounted('/pods/u/c'), true, 'only the next call fails');
});
