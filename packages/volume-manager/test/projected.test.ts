import t from 'tap';
import { lstat, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Volume } from '@kubernetes/client-node';
import { collectProjectedData, ProjectedPlugin, serviceAccountTokenRequest } from '../src/plugins/projected.js';
import { b64, makeHost, makePod, recordingChown, volumeContext, type TestHost } from './api-volume-host.js';

function seed(th: TestHost): void {
  th.configMaps.set('prod/cfg', { metadata: { name: 'cfg', namespace: 'prod' }, data: { 'ca.crt': 'CA', shared: 'from-configmap' } });
  th.secrets.set('prod/creds', { metadata: { name: 'creds', namespace: 'prod' }, data: { password: b64('pw'), shared: b64('from-secret') } });
}

const allSources: V1Volume = {
  name: 'kube-api-access',
  projected: {
    defaultMode: 0o420,
    sources: [
      { serviceAccountToken: { path: 'token', audience: 'vault', expirationSeconds: 600 } },
      { configMap: { name: 'cfg', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { secret: { name: 'creds', items: [{ key: 'password', path: 'db/password', mode: 0o400 }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
    ],
  },
};

t.test('serviceAccountTokenRequest: audiences, default expiry, bound to the pod', async (t) => {
  const pod = makePod([]);
  t.same(serviceAccountTokenRequest(pod, 'vault', 600), {
    spec: { audiences: ['vault'], expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' } },
  });
  t.same(serviceAccountTokenRequest(pod, undefined, undefined).spec, {
    audiences: [],
    expirationSeconds: 3600,
    boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' },
  });
});

t.test('every source lands in one tmpfs directory with the projected defaultMode', async (t) => {
  const th = await makeHost(t);
  seed(th);
  const ctx = volumeContext(th, makePod([allSources]), allSources, 'kubernetes.io~projected');
  const plugin = new ProjectedPlugin();
  t.equal(plugin.name, 'kubernetes.io/projected');
  t.equal(plugin.requiresRemount, true);
  t.ok(plugin.canSupport(allSources));
  t.notOk(plugin.canSupport({ name: 'x', secret: { secretName: 's' } }));

  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: true, selinuxRelabel: true });
  t.same(th.mounter.mountCalls.map((c) => c.target), [ctx.dir]);
  t.equal(await readFile(join(ctx.dir, 'token'), 'utf8'), 'token-1');
  t.equal(await readFile(join(ctx.dir, 'ca.crt'), 'utf8'), 'CA');
  t.equal(await readFile(join(ctx.dir, 'db/password'), 'utf8'), 'pw');
  t.equal(await readFile(join(ctx.dir, 'namespace'), 'utf8'), 'prod');
  t.equal((await stat(join(ctx.dir, 'token'))).mode & 0o7777, 0o420, 'the token has the defaultMode');
  t.equal((await stat(join(ctx.dir, 'ca.crt'))).mode & 0o7777, 0o420);
  t.equal((await stat(join(ctx.dir, 'db/password'))).mode & 0o7777, 0o400);

  t.same(th.tokenRequests, [
    {
      namespace: 'prod',
      name: 'builder',
      request: {
        spec: { audiences: ['vault'], expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' } },
      },
    },
  ]);

  th.token.value = 'token-2';
  await plugin.setUp(ctx);
  t.equal(await readFile(join(ctx.dir, 'token'), 'utf8'), 'token-2', 'a refreshed token is written');
  t.equal(th.mounter.mountCalls.length, 1);
});

t.test('with fsGroup the token is 0600 and the ownership pass opens it to the group (0640)', async (t) => {
  const th = await makeHost(t);
  seed(th);
  const ctx = volumeContext(th, makePod([allSources]), allSources, 'kubernetes.io~projected', 1234);
  const { calls, chown } = recordingChown();
  await new ProjectedPlugin({ chown }).setUp(ctx);
  t.equal((await stat(join(ctx.dir, 'token'))).mode & 0o7777, 0o640);
  t.equal((await stat(join(ctx.dir, 'ca.crt'))).mode & 0o7777, 0o460, 'others keep defaultMode, plus group read');
  t.ok(calls.some(([p, , gid]) => p.endsWith('/token') && gid === 1234));

  const data = await collectProjectedData(allSources.projected!, ctx.pod, th.host, 1234);
  t.equal(data.get('token')!.mode, 0o600);
  t.equal(data.get('ca.crt')!.mode, 0o420);
});

t.test('a later source replaces an earlier one at the same path', async (t) => {
  const th = await makeHost(t);
  seed(th);
  const data = await collectProjectedData(
    { sources: [{ configMap: { name: 'cfg', items: [{ key: 'shared', path: 'shared' }] } }, { secret: { name: 'creds', items: [{ key: 'shared', path: 'shared' }] } }] },
    makePod([]),
    th.host,
  );
  t.equal(Buffer.from(data.get('shared')!.data).toString(), 'from-secret');
  t.equal(data.get('shared')!.mode, 0o644, 'API default mode');
});

t.test('optional sources that are missing contribute nothing', async (t) => {
  const th = await makeHost(t);
  const data = await collectProjectedData(
    {
      sources: [
        { configMap: { name: 'absent', optional: true } },
        { secret: { name: 'absent', optional: true, items: [{ key: 'k', path: 'k' }] } },
      ],
    },
    makePod([]),
    th.host,
  );
  t.equal(data.size, 0);
});

t.test("failures of several sources come back as Go's aggregate; one alone as itself", async (t) => {
  const th = await makeHost(t);
  seed(th);
  const pod = makePod([]);
  await t.rejects(
    collectProjectedData(
      {
        sources: [
          { secret: { name: 'gone' } },
          { configMap: { name: 'cfg', items: [{ key: 'nope', path: 'n' }] } },
          { downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'spec.nodeName' } }] } },
          { configMap: { name: 'cfg' } },
        ],
      },
      pod,
      th.host,
    ),
    { message: '[secret "gone" not found, configmap references non-existent config key: nope, unsupported fieldPath: spec.nodeName]' },
  );
  await t.rejects(collectProjectedData({ sources: [{ secret: { name: 'creds', items: [{ key: 'nope', path: 'n' }] } }] }, pod, th.host), {
    message: 'references non-existent secret key: nope',
  });
  th.token.error = new Error('failed to fetch token: serviceaccounts "builder" not found');
  await t.rejects(collectProjectedData({ sources: [{ serviceAccountToken: { path: 'token' } }] }, pod, th.host), {
    message: 'failed to fetch token: serviceaccounts "builder" not found',
  });
  await t.rejects(
    collectProjectedData({ sources: [{ serviceAccountToken: { path: 'token' } }, { secret: { name: 'gone' } }] }, pod, th.host),
    { message: '[failed to fetch token: serviceaccounts "builder" not found, secret "gone" not found]' },
  );
});

t.test('a failing source fails the set-up before mounting', async (t) => {
  const th = await makeHost(t);
  const volume = { name: 'p', projected: { sources: [{ configMap: { name: 'gone' } }] } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~projected');
  await t.rejects(new ProjectedPlugin().setUp(ctx), { message: 'configmap "gone" not found' });
  t.equal(th.mounter.mountCalls.length, 0);
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });
});

t.test("tearDown unmounts, removes the directory and forgets the pod's tokens", async (t) => {
  const th = await makeHost(t);
  seed(th);
  const ctx = volumeContext(th, makePod([allSources]), allSources, 'kubernetes.io~projected');
  const plugin = new ProjectedPlugin();
  await plugin.setUp(ctx);
  await plugin.tearDown(ctx.dir, th.host);
  t.same(th.mounter.unmountCalls, [ctx.dir]);
  await t.rejects(lstat(ctx.dir), { code: 'ENOENT' });
  t.same(th.deletedTokens, ['uid-1']);
});
