import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeApiObjects } from '../src/fake-api.js';
import { checkHostPathType, HostPathPlugin, type HostPathStat } from '../src/plugins/host-path.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { VolumeContext, VolumeHost } from '../src/types.js';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-hostpath-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function makeHost(podsDir: string, mounter = new FakeMounter()): VolumeHost {
  const api = new FakeApiObjects();
  return {
    podsDir,
    nodeName: 'node-1',
    mounter,
    configMaps: api,
    secrets: api,
    tokens: api,
    persistentVolumes: api,
    node: { allocatableMilliCpu: 4000, allocatableMemoryBytes: 8 * 2 ** 30, hostIPs: () => ['10.0.0.1'] },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  };
}

const pod: V1Pod = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, spec: { containers: [{ name: 'app' }] } };

function context(host: VolumeHost, path: string, type?: string): VolumeContext {
  const volume: V1Volume = { name: 'data', hostPath: { path, ...(type !== undefined ? { type } : {}) } };
  return { pod, volume, dir: join(host.podsDir, 'uid-1', 'volumes', 'kubernetes.io~host-path', 'data'), host };
}

const notA = (p: string, what: string): { message: string } => ({ message: `hostPath type check failed: ${p} is not a ${what}` });

t.test('canSupport and the returned mount', async (t) => {
  const dir = await tempDir(t);
  const plugin = new HostPathPlugin();
  t.equal(plugin.name, 'kubernetes.io/host-path');
  t.equal(plugin.requiresRemount, false);
  t.ok(plugin.canSupport({ name: 'x', hostPath: { path: '/x' } }));
  t.notOk(plugin.canSupport({ name: 'x', emptyDir: {} }));
  const host = makeHost(dir);
  t.same(await plugin.setUp(context(host, join(dir, 'missing'))), { path: join(dir, 'missing'), readOnly: false, selinuxRelabel: false }, 'type "" checks nothing');
  t.same(await plugin.setUp(context(host, dir, '')), { path: dir, readOnly: false, selinuxRelabel: false });
});

t.test('a path with .. is refused whatever the type', async (t) => {
  const host = makeHost(await tempDir(t));
  await t.rejects(new HostPathPlugin().setUp(context(host, '/var/../etc')), { message: "invalid HostPath `/var/../etc`: must not contain '..'" });
  await t.resolves(new HostPathPlugin().setUp(context(host, '/var/..etc')), 'a name starting with .. is fine');
});

t.test('DirectoryOrCreate creates missing directories with 0755 and checks existing ones', async (t) => {
  const dir = await tempDir(t);
  const host = makeHost(dir);
  const plugin = new HostPathPlugin();
  const target = join(dir, 'a', 'b');
  const old = process.umask(0o022);
  t.teardown(() => void process.umask(old));
  await plugin.setUp(context(host, target, 'DirectoryOrCreate'));
  const info = await stat(target);
  t.ok(info.isDirectory());
  t.equal(info.mode & 0o777, 0o755);
  await t.resolves(plugin.setUp(context(host, target, 'DirectoryOrCreate')), 'an existing directory');
  await writeFile(join(dir, 'file'), '');
  await t.rejects(plugin.setUp(context(host, join(dir, 'file'), 'DirectoryOrCreate')), notA(join(dir, 'file'), 'directory'));
});

t.test('Directory must exist and be a directory (symlinks followed)', async (t) => {
  const dir = await tempDir(t);
  const host = makeHost(dir);
  const plugin = new HostPathPlugin();
  await mkdir(join(dir, 'd'));
  await symlink(join(dir, 'd'), join(dir, 'link'));
  await writeFile(join(dir, 'f'), '');
  await t.resolves(plugin.setUp(context(host, join(dir, 'd'), 'Directory')));
  await t.resolves(plugin.setUp(context(host, join(dir, 'link'), 'Directory')));
  await t.rejects(plugin.setUp(context(host, join(dir, 'nope'), 'Directory')), notA(join(dir, 'nope'), 'directory'));
  await t.rejects(plugin.setUp(context(host, join(dir, 'f'), 'Directory')), notA(join(dir, 'f'), 'directory'));
});

t.test('FileOrCreate creates an empty 0644 file, keeps an existing one, refuses a directory', async (t) => {
  const dir = await tempDir(t);
  const host = makeHost(dir);
  const plugin = new HostPathPlugin();
  const old = process.umask(0o022);
  t.teardown(() => void process.umask(old));
  const f = join(dir, 'new.txt');
  await plugin.setUp(context(host, f, 'FileOrCreate'));
  const info = await stat(f);
  t.ok(info.isFile());
  t.equal(info.size, 0);
  t.equal(info.mode & 0o777, 0o644);
  await writeFile(f, 'keep me');
  await plugin.setUp(context(host, f, 'FileOrCreate'));
  t.equal(await readFile(f, 'utf8'), 'keep me', 'an existing file is not truncated');
  await t.rejects(plugin.setUp(context(host, dir, 'FileOrCreate')), notA(dir, 'file'));
  await t.rejects(plugin.setUp(context(host, join(dir, 'no', 'such', 'f'), 'FileOrCreate')), {
    message: `open ${join(dir, 'no', 'such', 'f')}: no such file or directory`,
  }, "Go's makeFile does not create parents");
});

t.test('File, Socket, CharDevice with real files, a unix socket and /dev/null', async (t) => {
  const dir = await tempDir(t);
  const host = makeHost(dir);
  const plugin = new HostPathPlugin();
  const f = join(dir, 'f');
  await writeFile(f, 'x');
  const sock = join(dir, 's.sock');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

  await t.resolves(plugin.setUp(context(host, f, 'File')));
  await t.rejects(plugin.setUp(context(host, join(dir, 'nope'), 'File')), notA(join(dir, 'nope'), 'file'));
  await t.rejects(plugin.setUp(context(host, dir, 'File')), notA(dir, 'file'));
  await t.resolves(plugin.setUp(context(host, sock, 'File')), 'v1.20: File accepts anything that is not a directory');

  await t.resolves(plugin.setUp(context(host, sock, 'Socket')));
  await t.rejects(plugin.setUp(context(host, f, 'Socket')), notA(f, 'socket file'));
  await t.rejects(plugin.setUp(context(host, join(dir, 'nope'), 'Socket')), notA(join(dir, 'nope'), 'socket file'));

  await t.resolves(plugin.setUp(context(host, '/dev/null', 'CharDevice')));
  await t.rejects(plugin.setUp(context(host, f, 'CharDevice')), notA(f, 'character device'));
  await t.rejects(plugin.setUp(context(host, '/dev/null', 'BlockDevice')), notA('/dev/null', 'block device'));
});

t.test('BlockDevice through an injected stat, and a real loop device when there is one', async (t) => {
  const kinds = (block: boolean): HostPathStat => ({
    isDirectory: () => false,
    isFile: () => false,
    isSocket: () => false,
    isCharacterDevice: () => false,
    isBlockDevice: () => block,
  });
  const host = makeHost(await tempDir(t));
  const fake = new HostPathPlugin({ stat: async (p) => kinds(p === '/dev/sdz') });
  await t.resolves(fake.setUp(context(host, '/dev/sdz', 'BlockDevice')));
  await t.rejects(fake.setUp(context(host, '/dev/sdy', 'BlockDevice')), notA('/dev/sdy', 'block device'));
  await t.rejects(fake.setUp(context(host, '/dev/sdz', 'CharDevice')), notA('/dev/sdz', 'character device'));

  const loop = await stat('/dev/loop0').catch(() => undefined);
  if (loop?.isBlockDevice()) await t.resolves(new HostPathPlugin().setUp(context(host, '/dev/loop0', 'BlockDevice')), 'real /dev/loop0');
  else t.comment('no /dev/loop0 block device here; the injected stat covers BlockDevice');
});

t.test('an unknown type is an invalid volume type', async (t) => {
  await t.rejects(checkHostPathType('/tmp', 'Pipe'), { message: 'Pipe is an invalid volume type' });
});

t.test('tearDown removes only the bookkeeping directory, never the host path', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter();
  const host = makeHost(join(dir, 'pods'), mounter);
  const plugin = new HostPathPlugin();
  const hostData = join(dir, 'host-data');
  await mkdir(hostData);
  await writeFile(join(hostData, 'precious'), 'keep');
  const ctx = context(host, hostData, 'Directory');
  await plugin.setUp(ctx);
  await mkdir(ctx.dir, { recursive: true });
  await symlink(hostData, join(ctx.dir, 'link'));

  await plugin.tearDown(ctx.dir, host);
  await t.rejects(stat(ctx.dir), { code: 'ENOENT' });
  t.equal(await readFile(join(hostData, 'precious'), 'utf8'), 'keep');
  await t.resolves(plugin.tearDown(ctx.dir, host), 'a missing directory is fine');

  await mkdir(ctx.dir, { recursive: true });
  await mounter.mountTmpfs(ctx.dir);
  await t.rejects(plugin.tearDown(ctx.dir, host), { message: `cannot remove volume directory ${ctx.dir}: ${ctx.dir} is still mounted` });
  t.ok((await stat(ctx.dir)).isDirectory(), 'nothing removed while mounted');
});
