import t from 'tap';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { collectDownwardAPIData, DownwardAPIPlugin } from '../src/plugins/downward-api.js';
import { makeHost, makePod, volumeContext } from './api-volume-host.js';

const node = { allocatableMilliCpu: 3500, allocatableMemoryBytes: 2 * 2 ** 30, allocatableEphemeralStorageBytes: 50e9, hostIPs: () => [] };

function pod(): V1Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'prod',
      uid: 'uid-1',
      labels: { zone: 'us-east', app: 'web' },
      annotations: { 'build.example.com/commit': 'abc"123', note: 'multi\nline' },
    },
    spec: {
      containers: [
        { name: 'app', resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '250m', memory: '64Mi' } } },
        { name: 'sidecar' },
      ],
    },
  };
}

const text = (m: Map<string, { data: Buffer | string }>, k: string) => Buffer.from(m.get(k)!.data).toString();

t.test('fieldRef files: metadata fields, label and annotation maps and single keys', async (t) => {
  const data = collectDownwardAPIData(
    [
      { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
      { path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } },
      { path: 'uid', fieldRef: { fieldPath: 'metadata.uid' } },
      { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' }, mode: 0o400 },
      { path: 'zone', fieldRef: { fieldPath: "metadata.labels['zone']" } },
      { path: 'commit', fieldRef: { fieldPath: "metadata.annotations['build.example.com/commit']" } },
    ],
    pod(),
    node,
    undefined,
  );
  t.equal(text(data, 'name'), 'web');
  t.equal(text(data, 'namespace'), 'prod');
  t.equal(text(data, 'uid'), 'uid-1');
  t.equal(text(data, 'labels'), 'app="web"\nzone="us-east"');
  t.equal(text(data, 'annotations'), 'build.example.com/commit="abc\\"123"\nnote="multi\\nline"');
  t.equal(text(data, 'zone'), 'us-east');
  t.equal(text(data, 'commit'), 'abc"123');
  t.equal(data.get('name')!.mode, 0o644);
  t.equal(data.get('annotations')!.mode, 0o400);
});

t.test('resourceFieldRef files: limits, requests, divisors, node allocatable without a limit', async (t) => {
  const data = collectDownwardAPIData(
    [
      { path: 'cpu_limit', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
      { path: 'cpu_limit_cores', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu' } },
      { path: 'cpu_request', resourceFieldRef: { containerName: 'app', resource: 'requests.cpu', divisor: '1m' } },
      { path: 'mem_limit', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
      { path: 'mem_request', resourceFieldRef: { containerName: 'app', resource: 'requests.memory' } },
      { path: 'side_cpu', resourceFieldRef: { containerName: 'sidecar', resource: 'limits.cpu', divisor: '1m' } },
      { path: 'side_mem', resourceFieldRef: { containerName: 'sidecar', resource: 'limits.memory', divisor: '1Gi' } },
      { path: 'side_eph', resourceFieldRef: { containerName: 'sidecar', resource: 'limits.ephemeral-storage', divisor: '1G' } },
    ],
    pod(),
    node,
    0o444,
  );
  t.equal(text(data, 'cpu_limit'), '500');
  t.equal(text(data, 'cpu_limit_cores'), '1');
  t.equal(text(data, 'cpu_request'), '250');
  t.equal(text(data, 'mem_limit'), '128');
  t.equal(text(data, 'mem_request'), String(64 * 2 ** 20));
  t.equal(text(data, 'side_cpu'), '3500');
  t.equal(text(data, 'side_mem'), '2');
  t.equal(text(data, 'side_eph'), '50');
  t.equal(data.get('side_eph')!.mode, 0o444);
});

t.test("errors are Go's texts, several aggregated", async (t) => {
  t.throws(() => collectDownwardAPIData([{ path: 'n', fieldRef: { fieldPath: 'spec.nodeName' } }], pod(), node, 0o644), {
    message: 'unsupported fieldPath: spec.nodeName',
  });
  t.throws(
    () =>
      collectDownwardAPIData(
        [
          { path: 'a', fieldRef: { fieldPath: 'status.podIP' } },
          { path: 'b', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } },
          { path: 'c', resourceFieldRef: { containerName: 'app', resource: 'limits.gpu' } },
          { path: 'd', fieldRef: { fieldPath: 'metadata.name' } },
        ],
        pod(),
        node,
        0o644,
      ),
    { message: '[unsupported fieldPath: status.podIP, container nope not found, unsupported container resource : limits.gpu]' },
  );
  t.throws(() => collectDownwardAPIData([{ path: 'x', fieldRef: { fieldPath: "spec.containers['app']" } }], pod(), node, 0o644), {
    message: 'fieldPath "spec.containers[\'app\']" does not support subscript',
  });
});

t.test('setUp writes on tmpfs and refreshes when labels change', async (t) => {
  const th = await makeHost(t);
  const volume = {
    name: 'podinfo',
    downwardAPI: {
      defaultMode: 0o440,
      items: [
        { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
        { path: 'limits/cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
      ],
    },
  };
  const p = makePod([volume]);
  p.spec!.containers[0].resources = { limits: { cpu: '2' } };
  const ctx = volumeContext(th, p, volume, 'kubernetes.io~downward-api');
  const plugin = new DownwardAPIPlugin();
  t.equal(plugin.name, 'kubernetes.io/downward-api');
  t.equal(plugin.requiresRemount, true);
  t.ok(plugin.canSupport(volume));

  t.same(await plugin.setUp(ctx), { path: ctx.dir, readOnly: true, selinuxRelabel: true });
  t.same(th.mounter.mountCalls.map((c) => c.target), [ctx.dir]);
  t.equal(await readFile(join(ctx.dir, 'labels'), 'utf8'), 'app="web"');
  t.equal(await readFile(join(ctx.dir, 'limits/cpu'), 'utf8'), '2000');
  t.equal((await stat(join(ctx.dir, 'labels'))).mode & 0o7777, 0o440);

  p.metadata!.labels = { app: 'web', version: 'v2' };
  await plugin.setUp(ctx);
  t.equal(await readFile(join(ctx.dir, 'labels'), 'utf8'), 'app="web"\nversion="v2"');
  t.equal(th.mounter.mountCalls.length, 1);

  await plugin.tearDown(ctx.dir, th.host);
  t.same(th.mounter.unmountCalls, [ctx.dir]);
});

t.test('a bad item fails the set-up before anything is mounted', async (t) => {
  const th = await makeHost(t);
  const volume = { name: 'podinfo', downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] } };
  const ctx = volumeContext(th, makePod([volume]), volume, 'kubernetes.io~downward-api');
  await t.rejects(new DownwardAPIPlugin().setUp(ctx), { message: 'unsupported fieldPath: status.podIP' });
  t.equal(th.mounter.mountCalls.length, 0);
  t.ok(th.logger.messages('error').includes('Error preparing data for downwardAPI volume'));
});
