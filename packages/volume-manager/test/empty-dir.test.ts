import t, { type Test } from 'tap';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeApiObjects } from '../src/fake-api.js';
import { SystemMounter } from '../src/mounter.js';
import { nodeOwnershipFs, type OwnershipFs } from '../src/ownership.js';
import { EmptyDirPlugin, emptyDirMemorySizeBytes } from '../src/plugins/empty-dir.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { Mounter, VolumeContext, VolumeHost } from '../src/types.js';

const Mi = 2 ** 20;
const Gi = 2 ** 30;

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-emptydir-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function makeHost(podsDir: string, mounter: Mounter = new FakeMounter(), allocatableMemoryBytes = 8 * Gi): VolumeHost {
  const api = new FakeApiObjects();
  return {
    podsDir,
    nodeName: 'node-1',
    mounter,
    configMaps: api,
    secrets: api,
    tokens: api,
    persistentVolumes: api,
    node: { allocatableMilliCpu: 4000, allocatableMemoryBytes, hostIPs: () => ['10.0.0.1'] },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  };
}

function makePod(containers: V1Container[] = [{ name: 'app' }], initContainers?: V1Container[]): V1Pod {
  return { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, spec: { containers, ...(initContainers ? { initContainers } : {}) } };
}

function context(host: VolumeHost, emptyDir: V1Volume['emptyDir'], pod = makePod(), fsGroup?: number): VolumeContext {
  return {
    pod,
    volume: { name: 'cache', emptyDir },
    dir: join(host.podsDir, 'uid-1', 'volumes', 'kubernetes.io~empty-dir', 'cache'),
    host,
    ...(fsGroup !== undefined ? { fsGroup } : {}),
  };
}

const limited = (name: string, memory: string): V1Container => ({ name, resources: { limits: { memory } } });

t.test('the default medium is a 0777 directory whatever the umask, set up idempotently', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter();
  const host = makeHost(dir, mounter);
  const plugin = new EmptyDirPlugin();
  t.equal(plugin.name, 'kubernetes.io/empty-dir');
  t.equal(plugin.requiresRemount, false);
  t.ok(plugin.canSupport({ name: 'x', emptyDir: {} }));
  t.notOk(plugin.canSupport({ name: 'x', hostPath: { path: '/' } }));
  const old = process.umask(0o022);
  t.teardown(() => void process.umask(old));
  const ctx = context(host, {});
  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: false, selinuxRelabel: true });
  const info = await stat(ctx.dir);
  t.ok(info.isDirectory());
  t.equal(info.mode & 0o777, 0o777);
  await writeFile(join(ctx.dir, 'f'), 'x');
  await plugin.setUp(ctx);
  t.ok((await stat(join(ctx.dir, 'f'))).isFile(), 'a second setUp keeps the contents');
  t.same(mounter.callsOf('mountTmpfs'), [], 'no mounts for the default medium');
});

t.test('Memory mounts a tmpfs sized by sizeLimit once; an existing mount is kept', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter();
  const host = makeHost(dir, mounter);
  const plugin = new EmptyDirPlugin();
  const ctx = context(host, { medium: 'Memory', sizeLimit: '64Mi' });
  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: false, selinuxRelabel: true });
  t.same(mounter.callsOf('mountTmpfs'), [{ op: 'mountTmpfs', target: ctx.dir, sizeBytes: 64 * Mi }]);
  await plugin.setUp(ctx);
  t.equal(mounter.callsOf('mountTmpfs').length, 1, 'no second mount');

  // After a kubelet restart the pod's tmpfs is still there: it is kept, not mounted over.
  const restarted = new FakeMounter([ctx.dir]);
  await new EmptyDirPlugin().setUp({ ...ctx, host: makeHost(dir, restarted) });
  t.same(restarted.callsOf('mountTmpfs'), []);
});

t.test('a failed tmpfs mount fails setUp with the mount error', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter().failNext('mountTmpfs', new Error('mounting tmpfs at /x is not permitted for this user or host'));
  const host = makeHost(dir, mounter);
  await t.rejects(new EmptyDirPlugin().setUp(context(host, { medium: 'Memory' })), { message: /not permitted/ });
});

t.test('the tmpfs size: node allocatable, lowered to the pod limit, lowered to sizeLimit', async (t) => {
  const vol = (sizeLimit?: string): V1Volume => ({ name: 'v', emptyDir: { medium: 'Memory', ...(sizeLimit ? { sizeLimit } : {}) } });
  t.equal(emptyDirMemorySizeBytes(makePod(), vol(), 8 * Gi), 8 * Gi, 'no limits: node allocatable');
  t.equal(emptyDirMemorySizeBytes(makePod(), vol(), 0), undefined, 'nothing known: the kernel default');
  t.equal(emptyDirMemorySizeBytes(makePod(), vol('1Gi'), 0), Gi, 'unknown allocatable does not hide sizeLimit');
  const twoLimited = makePod([limited('a', '256Mi'), limited('b', '256Mi')]);
  t.equal(emptyDirMemorySizeBytes(twoLimited, vol(), 8 * Gi), 512 * Mi, 'sum of the container limits');
  t.equal(emptyDirMemorySizeBytes(twoLimited, vol('1Gi'), 8 * Gi), 512 * Mi, 'a sizeLimit above the pod limit does not raise it');
  t.equal(emptyDirMemorySizeBytes(twoLimited, vol('100M'), 8 * Gi), 100_000_000, 'decimal suffixes');
  t.equal(emptyDirMemorySizeBytes(makePod([limited('a', '256Mi'), { name: 'b' }]), vol(), 8 * Gi), 8 * Gi, 'one container without a limit: no pod limit');
  t.equal(emptyDirMemorySizeBytes(makePod([limited('a', '256Mi')], [limited('init', '1Gi')]), vol(), 8 * Gi), Gi, 'an init container can raise the pod limit');
  t.equal(emptyDirMemorySizeBytes(makePod([limited('a', '16Gi')]), vol(), 8 * Gi), 8 * Gi, 'a pod limit above allocatable does not raise it');
  t.throws(() => emptyDirMemorySizeBytes(makePod(), vol('lots'), 8 * Gi), { message: /^invalid emptyDir sizeLimit "lots"/ });
});

t.test('HugePages and unknown media are refused', async (t) => {
  const host = makeHost(await tempDir(t));
  const plugin = new EmptyDirPlugin();
  await t.rejects(plugin.setUp(context(host, { medium: 'HugePages' })), { message: 'emptyDir medium "HugePages" (hugetlbfs) is not supported by this kubelet' });
  await t.rejects(plugin.setUp(context(host, { medium: 'HugePages-2Mi' })), { message: 'emptyDir medium "HugePages-2Mi" (hugetlbfs) is not supported by this kubelet' });
  await t.rejects(plugin.setUp(context(host, { medium: 'Disk' })), { message: 'unknown storage medium "Disk"' });
});

t.test('fsGroup: the volume is group-owned, group-writable and setgid', async (t) => {
  const dir = await tempDir(t);
  const chowns: Array<[string, number]> = [];
  const fs: OwnershipFs = {
    ...nodeOwnershipFs,
    chown: async (p, uid, gid) => {
      chowns.push([p, gid]);
      if (process.getuid?.() === 0) await nodeOwnershipFs.chown(p, uid, gid);
    },
  };
  const host = makeHost(dir);
  const plugin = new EmptyDirPlugin({ ownershipFs: fs });
  const ctx = context(host, {}, makePod(), 3000);
  await plugin.setUp(ctx);
  await writeFile(join(ctx.dir, 'f'), 'x');
  await plugin.setUp(ctx);
  t.same(chowns, [[ctx.dir, 3000], [join(ctx.dir, 'f'), 3000], [ctx.dir, 3000]], 'every setUp changes recursively (Go passes no policy for emptyDir)');
  const info = await stat(ctx.dir);
  t.equal(info.mode & 0o2777, 0o2777);
  if (process.getuid?.() === 0) t.equal(info.gid, 3000);
});

t.test('tearDown unmounts what is mounted at or below the directory, deepest first, then removes it', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter();
  const host = makeHost(dir, mounter);
  const plugin = new EmptyDirPlugin();
  const ctx = context(host, { medium: 'Memory' });
  await plugin.setUp(ctx);
  await mkdir(join(ctx.dir, 'inner'));
  await mounter.mountTmpfs(join(ctx.dir, 'inner'));
  await plugin.tearDown(ctx.dir, host);
  t.same(mounter.callsOf('unmount').map((c) => c.target), [join(ctx.dir, 'inner'), ctx.dir]);
  await t.rejects(stat(ctx.dir), { code: 'ENOENT' });
  await t.resolves(plugin.tearDown(ctx.dir, host), 'a missing directory is fine');

  const plain = context(host, {});
  await plugin.setUp(plain);
  await writeFile(join(plain.dir, 'f'), 'x');
  await plugin.tearDown(plain.dir, host);
  await t.rejects(stat(plain.dir), { code: 'ENOENT' });
});

t.test('a failed unmount fails tearDown and keeps the directory', async (t) => {
  const dir = await tempDir(t);
  const mounter = new FakeMounter();
  const host = makeHost(dir, mounter);
  const plugin = new EmptyDirPlugin();
  const ctx = context(host, { medium: 'Memory' });
  await plugin.setUp(ctx);
  mounter.failNext('unmount', new Error('umount: target is busy'));
  await t.rejects(plugin.tearDown(ctx.dir, host), { message: 'umount: target is busy' });
  t.ok((await stat(ctx.dir)).isDirectory());
});

t.test('a real Memory emptyDir on tmpfs', { skip: process.getuid?.() !== 0 ? 'mounting tmpfs needs root' : false }, async (t) => {
  const dir = await tempDir(t);
  const mounter = new SystemMounter();
  const host = makeHost(dir, mounter);
  const plugin = new EmptyDirPlugin();
  const ctx = context(host, { medium: 'Memory', sizeLimit: '1Mi' });
  t.teardown(() => mounter.unmount(ctx.dir).catch(() => undefined));
  await plugin.setUp(ctx);
  const entry = (await mounter.entries()).find((e) => e.mountPoint === ctx.dir);
  t.equal(entry?.fsType, 'tmpfs');
  t.ok(entry?.superOptions.includes('size=1024k'), `size=1024k in ${entry?.superOptions.join(',')}`);
  await plugin.setUp(ctx);
  t.equal((await mounter.entries()).filter((e) => e.mountPoint === ctx.dir).length, 1, 'not mounted twice');
  await writeFile(join(ctx.dir, 'f'), 'x');
  await plugin.tearDown(ctx.dir, host);
  t.equal(await mounter.isMountPoint(ctx.dir), false);
  await t.rejects(stat(ctx.dir), { code: 'ENOENT' });
});
