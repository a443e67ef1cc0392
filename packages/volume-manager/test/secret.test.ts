import t from 'tap';
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { makeSecretPayload, SecretPlugin } from '../src/plugins/secret.js';
import { b64, makeHost, makePod, recordingChown, volumeContext } from './api-volume-host.js';

const secret: V1Secret = {
  metadata: { name: 'creds', namespace: 'prod' },
  data: { username: b64('admin'), password: b64('s3cr3t\n'), key: b64(Buffer.from([1, 2, 255])) },
};

t.test('makeSecretPayload: data decoded from base64, defaultMode, items with their own mode', async (t) => {
  const all = makeSecretPayload(undefined, secret, undefined, false);
  t.same([...all.keys()], ['username', 'password', 'key']);
  t.equal(Buffer.from(all.get('password')!.data).toString(), 's3cr3t\n');
  t.same(all.get('key')!.data, Buffer.from([1, 2, 255]));
  t.equal(all.get('username')!.mode, 0o644);

  const some = makeSecretPayload([{ key: 'password', path: 'db/pass', mode: 0o400 }, { key: 'username', path: 'db/user' }], secret, 0o440, false);
  t.same([...some.keys()], ['db/pass', 'db/user']);
  t.equal(some.get('db/pass')!.mode, 0o400);
  t.equal(some.get('db/user')!.mode, 0o440);
});

t.test("makeSecretPayload: a missing key is Go's error unless optional", async (t) => {
  t.throws(() => makeSecretPayload([{ key: 'token', path: 't' }], secret, 0o644, false), { message: 'references non-existent secret key: token' });
  t.same([...makeSecretPayload([{ key: 'token', path: 't' }], secret, 0o644, true).keys()], []);
});

t.test('setUp mounts a tmpfs once and writes the secret into it', async (t) => {
  const th = await makeHost(t);
  th.secrets.set('prod/creds', structuredClone(secret));
  const volume = { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret');
  const plugin = new SecretPlugin();
  t.equal(plugin.name, 'kubernetes.io/secret');
  t.equal(plugin.requiresRemount, true);
  t.ok(plugin.canSupport(volume));
  t.notOk(plugin.canSupport({ name: 'c', configMap: { name: 'x' } }));

  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: true, selinuxRelabel: true });
  t.same(
    th.mounter.mountCalls.map((c) => c.target),
    [ctx.dir],
  );
  t.equal(await readFile(join(ctx.dir, 'username'), 'utf8'), 'admin');
  t.equal(await readFile(join(ctx.dir, 'password'), 'utf8'), 's3cr3t\n');
  t.equal((await stat(join(ctx.dir, 'password'))).mode & 0o7777, 0o400);

  th.secrets.get('prod/creds')!.data!.username = b64('root');
  await plugin.setUp(ctx);
  t.equal(th.mounter.mountCalls.length, 1, 'never mounted twice');
  t.equal(await readFile(join(ctx.dir, 'username'), 'utf8'), 'root');
});

t.test('an existing tmpfs (a kubelet restart) is not mounted over', async (t) => {
  const th = await makeHost(t);
  th.secrets.set('prod/creds', structuredClone(secret));
  const volume = { name: 'creds', secret: { secretName: 'creds' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret');
  th.mounter.mounted.add(ctx.dir);
  await new SecretPlugin().setUp(ctx);
  t.equal(th.mounter.mountCalls.length, 0);
  t.equal(await readFile(join(ctx.dir, 'username'), 'utf8'), 'admin');
});

t.test('a missing secret rejects with the getter\'s error before mounting; optional gives an empty volume', async (t) => {
  const th = await makeHost(t);
  const volume = { name: 'creds', secret: { secretName: 'gone' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret');
  await t.rejects(new SecretPlugin().setUp(ctx), { message: 'secret "gone" not found' });
  t.equal(th.mounter.mountCalls.length, 0);
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });

  const optional = { name: 'creds', secret: { secretName: 'gone', optional: true } };
  const octx = volumeContext(th, makePod([optional]), optional, 'kubernetes.io~secret');
  await new SecretPlugin().setUp(octx);
  t.same((await readdir(octx.dir)).filter((n) => !n.startsWith('..')), []);
  t.equal(th.mounter.mountCalls.length, 1);
});

t.test('a failed tmpfs mount rejects naming the volume and the pod', async (t) => {
  const th = await makeHost(t);
  th.secrets.set('prod/creds', structuredClone(secret));
  th.mounter.mountError = new Error('mount: /x: permission denied.');
  const volume = { name: 'creds', secret: { secretName: 'creds' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret');
  await t.rejects(new SecretPlugin().setUp(ctx), {
    name: 'VolumeSetupError',
    message: `failed to mount tmpfs for volume "creds" of pod prod/web at ${ctx.dir}: mount: /x: permission denied.`,
  });
});

t.test('fsGroup opens files to the group for reading only', async (t) => {
  const th = await makeHost(t);
  th.secrets.set('prod/creds', structuredClone(secret));
  const volume = { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret', 3000);
  const { calls, chown } = recordingChown();
  await new SecretPlugin({ chown }).setUp(ctx);
  t.equal((await stat(join(ctx.dir, 'password'))).mode & 0o7777, 0o440);
  t.ok(calls.some(([p, , gid]) => p.endsWith('/password') && gid === 3000));
});

t.test('tearDown unmounts the tmpfs and removes the directory', async (t) => {
  const th = await makeHost(t);
  th.secrets.set('prod/creds', structuredClone(secret));
  const volume = { name: 'creds', secret: { secretName: 'creds' } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~secret');
  const plugin = new SecretPlugin();
  await plugin.setUp(ctx);
  await plugin.tearDown(ctx.dir, th.host);
  t.same(th.mounter.unmountCalls, [ctx.dir]);
  t.equal(th.mounter.mounted.size, 0);
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });
});
