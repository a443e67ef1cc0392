import t from 'tap';
import * as fsp from 'node:fs/promises';
import { lstat, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { AtomicWriterFs } from '../src/atomic-writer.js';
import { ConfigMapPlugin, makeConfigMapPayload } from '../src/plugins/configmap.js';
import { b64, makeHost, makePod, recordingChown, volumeContext } from './api-volume-host.js';

const cm: V1ConfigMap = {
  metadata: { name: 'cfg', namespace: 'prod' },
  data: { 'app.conf': 'a=1', 'other.conf': 'b=2' },
  binaryData: { blob: b64(Buffer.from([0xff, 0x00, 0x7f])) },
};

const text = (p: { data: Buffer | string } | undefined) => (p ? Buffer.from(p.data).toString() : undefined);

t.test('makeConfigMapPayload: all keys with defaultMode, binaryData decoded', async (t) => {
  const payload = makeConfigMapPayload(undefined, cm, 0o600, false);
  t.same([...payload.keys()], ['app.conf', 'other.conf', 'blob']);
  t.equal(text(payload.get('app.conf')), 'a=1');
  t.same(payload.get('blob')!.data, Buffer.from([0xff, 0x00, 0x7f]));
  t.same([...payload.values()].map((p) => p.mode), [0o600, 0o600, 0o600]);
  t.equal(makeConfigMapPayload([], cm, undefined, false).get('app.conf')!.mode, 0o644, 'API default 0644');
});

t.test('makeConfigMapPayload: items pick keys, paths and modes', async (t) => {
  const payload = makeConfigMapPayload(
    [
      { key: 'app.conf', path: 'conf/app', mode: 0o400 },
      { key: 'blob', path: 'bin' },
    ],
    cm,
    0o640,
    false,
  );
  t.same([...payload.keys()], ['conf/app', 'bin']);
  t.equal(payload.get('conf/app')!.mode, 0o400);
  t.equal(payload.get('bin')!.mode, 0o640);
  t.same(payload.get('bin')!.data, Buffer.from([0xff, 0x00, 0x7f]));
});

t.test("makeConfigMapPayload: a missing key is Go's error unless optional", async (t) => {
  t.throws(() => makeConfigMapPayload([{ key: 'nope', path: 'x' }], cm, 0o644, false), {
    message: 'configmap references non-existent config key: nope',
  });
  const payload = makeConfigMapPayload(
    [
      { key: 'nope', path: 'x' },
      { key: 'app.conf', path: 'y' },
    ],
    cm,
    0o644,
    true,
  );
  t.same([...payload.keys()], ['y']);
  t.same([...makeConfigMapPayload([{ key: 'k', path: 'p' }], { metadata: {} }, 0o644, true).keys()], []);
});

t.test('setUp writes the ConfigMap on disk, read-only, relabelled, and refreshes it', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg', items: [{ key: 'app.conf', path: 'app.conf' }, { key: 'other.conf', path: 'sub/other.conf', mode: 0o600 }] } };
  const pod = makePod([volume]);
  const ctx = volumeContext(th, pod, volume, 'kubernetes.io~configmap');
  const plugin = new ConfigMapPlugin();
  t.equal(plugin.name, 'kubernetes.io/configmap');
  t.equal(plugin.requiresRemount, true);
  t.ok(plugin.canSupport(volume));
  t.notOk(plugin.canSupport({ name: 'x', emptyDir: {} }));

  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: true, selinuxRelabel: true });
  t.equal(th.mounter.mountCalls.length, 0, 'configMaps live on disk');
  t.equal(await readFile(join(ctx.dir, 'app.conf'), 'utf8'), 'a=1');
  t.equal(await readFile(join(ctx.dir, 'sub/other.conf'), 'utf8'), 'b=2');
  t.equal((await stat(join(ctx.dir, 'app.conf'))).mode & 0o7777, 0o644);
  t.equal((await stat(join(ctx.dir, 'sub/other.conf'))).mode & 0o7777, 0o600);
  t.equal((await stat(ctx.dir)).mode & 0o777, 0o777, "the wrapped emptyDir's permissions");
  const firstTs = await readlink(join(ctx.dir, '..data'));

  await plugin.setUp(ctx);
  t.equal(await readlink(join(ctx.dir, '..data')), firstTs, 'an unchanged ConfigMap is not rewritten');

  th.configMaps.get('prod/cfg')!.data!['app.conf'] = 'a=2';
  await plugin.setUp(ctx);
  t.equal(await readFile(join(ctx.dir, 'app.conf'), 'utf8'), 'a=2');
  t.not(await readlink(join(ctx.dir, '..data')), firstTs);
});

t.test('a missing ConfigMap rejects with the getter\'s error; an optional one is an empty volume', async (t) => {
  const th = await makeHost(t);
  const volume = { name: 'config', configMap: { name: 'absent' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap');
  const plugin = new ConfigMapPlugin();
  await t.rejects(plugin.setUp(ctx), { message: 'configmap "absent" not found', statusCode: 404 });
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' }, 'nothing was created');

  const optional = { name: 'config', configMap: { name: 'absent', optional: true, items: [{ key: 'k', path: 'k' }] } };
  const octx = volumeContext(th, makePod([optional]), optional, 'kubernetes.io~configmap');
  await plugin.setUp(octx);
  t.same((await readdir(octx.dir)).filter((n) => !n.startsWith('..')), []);
  t.ok((await readdir(octx.dir)).includes('..data'));
});

t.test('other getter errors are not hidden by optional', async (t) => {
  const th = await makeHost(t);
  const boom = Object.assign(new Error('etcdserver: request timed out'), { statusCode: 500 });
  th.host = { ...th.host, configMaps: { getConfigMap: async () => Promise.reject(boom) } } as typeof th.host;
  const volume = { name: 'config', configMap: { name: 'cfg', optional: true } };
  await t.rejects(new ConfigMapPlugin().setUp(volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap')), boom);
});

t.test('a missing key rejects before anything is created', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg', items: [{ key: 'missing', path: 'm' }] } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap');
  await t.rejects(new ConfigMapPlugin().setUp(ctx), { message: 'configmap references non-existent config key: missing' });
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });
});

t.test('fsGroup: group ownership and group read on everything written', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg', defaultMode: 0o600, items: [{ key: 'app.conf', path: 'd/app.conf' }] } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap', 2000);
  const { calls, chown } = recordingChown();
  await new ConfigMapPlugin({ chown }).setUp(ctx);
  const ts = await readlink(join(ctx.dir, '..data'));
  t.equal((await stat(join(ctx.dir, 'd/app.conf'))).mode & 0o7777, 0o640, '0600 | group read');
  t.equal((await stat(join(ctx.dir, ts))).mode & 0o7777, 0o2755, 'directories: setgid and group read/exec');
  t.equal((await stat(join(ctx.dir, ts, 'd'))).mode & 0o2550, 0o2550);
  const chowned = new Set(calls.filter(([, , gid]) => gid === 2000).map(([p]) => p));
  t.ok(chowned.has(ctx.dir));
  t.ok(chowned.has(join(ctx.dir, ts, 'd', 'app.conf')));
});

t.test('nested volume mount points are created inside the volume', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg' } };
  const pod = makePod([volume, { name: 'inner', emptyDir: {} }]);
  pod.spec!.containers[0].volumeMounts = [
    { name: 'config', mountPath: '/etc/app' },
    { name: 'inner', mountPath: '/etc/app/cache' },
    { name: 'deeper', mountPath: '/etc/app/cache/deeper' },
  ];
  const ctx = volumeContext(th, pod, volume, 'kubernetes.io~configmap');
  await new ConfigMapPlugin().setUp(ctx);
  t.ok((await lstat(join(ctx.dir, 'cache'))).isDirectory());
  await t.rejects(lstat(join(ctx.dir, 'cache/deeper')), { code: 'ENOENT' }, 'only the first level');
});

t.test('a failed first set-up is torn down; a failed refresh keeps the contents', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap');
  const failing: AtomicWriterFs = { ...fsp, rename: async () => Promise.reject(new Error('disk on fire')) };
  await t.rejects(new ConfigMapPlugin({ writerFs: failing }).setUp(ctx), { message: 'disk on fire' });
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' }, 'the half set-up volume is gone');

  await new ConfigMapPlugin().setUp(ctx);
  th.configMaps.get('prod/cfg')!.data!['app.conf'] = 'changed';
  await t.rejects(new ConfigMapPlugin({ writerFs: failing }).setUp(ctx), { message: 'disk on fire' });
  t.equal(await readFile(join(ctx.dir, 'app.conf'), 'utf8'), 'a=1', 'the running pod keeps its files');
});

t.test('tearDown removes the directory', async (t) => {
  const th = await makeHost(t);
  th.configMaps.set('prod/cfg', structuredClone(cm));
  const volume = { name: 'config', configMap: { name: 'cfg' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~configmap');
  const plugin = new ConfigMapPlugin();
  await plugin.setUp(ctx);
  await plugin.tearDown(ctx.dir, th.host);
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });
  await plugin.tearDown(ctx.dir, th.host);
  t.pass('a second tearDown is harmless');
});
