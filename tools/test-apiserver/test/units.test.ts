import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { jsonMergePatch, jsonPatch, parseFieldSelector, parseLabelSelector, podQOSClass, podSchema, strategicMergePatch, type JsonObject } from '../src/index.js';
import { ApiError } from '../src/index.js';
import { http, pod, withServer } from './helpers.js';

/** The HTTP code of the ApiError `fn` throws (0 when it does not throw). */
function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
  return 0;
}

t.test('JSON merge patch (RFC 7386)', async (t) => {
  t.same(jsonMergePatch({ a: 'b', c: { d: 'e', f: 'g' } }, { a: 'z', c: { f: null } }), { a: 'z', c: { d: 'e' } });
  t.same(jsonMergePatch({ a: [1, 2] }, { a: [3] }), { a: [3] }, 'lists are replaced');
  t.same(jsonMergePatch({ a: 1 }, ['x']), ['x']);
});

t.test('JSON patch (RFC 6902)', async (t) => {
  const doc = { a: { b: [1, 2, 3] }, c: 'd' };
  t.same(
    jsonPatch(doc, [
      { op: 'add', path: '/a/b/-', value: 4 },
      { op: 'add', path: '/a/b/0', value: 0 },
      { op: 'move', from: '/c', path: '/e' },
      { op: 'copy', from: '/e', path: '/f~1g' },
      { op: 'remove', path: '/a/b/1' },
    ]),
    { a: { b: [0, 2, 3, 4] }, e: 'd', 'f/g': 'd' },
  );
  t.same(doc, { a: { b: [1, 2, 3] }, c: 'd' }, 'input untouched');
  t.equal(codeOf(() => jsonPatch(doc, [{ op: 'remove', path: '/nope' }])), 422);
  t.equal(codeOf(() => jsonPatch(doc, [{ op: 'replace', path: '/a/x', value: 1 }])), 422);
  t.equal(codeOf(() => jsonPatch(doc, { op: 'add' })), 400);
  t.equal(codeOf(() => jsonPatch(doc, [{ op: 'frobnicate', path: '/a' }])), 400);
});

t.test('strategic merge patch directives', async (t) => {
  const original: JsonObject = {
    metadata: { finalizers: ['a', 'b'], ownerReferences: [{ uid: '1', name: 'x' }] },
    spec: {
      containers: [
        { name: 'c1', image: 'i1', env: [{ name: 'A', value: '1' }] },
        { name: 'c2', image: 'i2' },
      ],
      volumes: [{ name: 'v', emptyDir: {} }],
      tolerations: [{ key: 'k1' }],
    },
    status: { conditions: [{ type: 'Ready', status: 'False' }] },
  };
  const merged = strategicMergePatch(
    original,
    {
      metadata: { finalizers: ['c', 'a'], ownerReferences: [{ uid: '2', name: 'y' }] },
      spec: {
        containers: [
          { name: 'c1', env: [{ name: 'B', value: '2' }] },
          { name: 'c2', $patch: 'delete' },
        ],
        volumes: [{ name: 'v', hostPath: { path: '/x' }, $retainKeys: ['name', 'hostPath'] }],
        tolerations: [{ key: 'k2' }],
      },
    },
    podSchema,
  );
  t.same(merged.metadata, { finalizers: ['a', 'b', 'c'], ownerReferences: [{ uid: '1', name: 'x' }, { uid: '2', name: 'y' }] });
  t.same((merged.spec as JsonObject).containers, [
    {
      name: 'c1',
      image: 'i1',
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
    },
  ]);
  t.same((merged.spec as JsonObject).volumes, [{ name: 'v', hostPath: { path: '/x' } }], '$retainKeys drops the old volume source');
  t.same((merged.spec as JsonObject).tolerations, [{ key: 'k2' }], 'lists without a merge key are replaced');

  const replaced = strategicMergePatch(original, { status: { conditions: [{ $patch: 'replace' }, { type: 'Initialized', status: 'True' }] } }, podSchema);
  t.same((replaced.status as JsonObject).conditions, [{ type: 'Initialized', status: 'True' }]);
  const mapReplace = strategicMergePatch(original, { status: { $patch: 'replace', phase: 'Running' } }, podSchema);
  t.same(mapReplace.status, { phase: 'Running' });
  const deleted = strategicMergePatch(original, { status: { $patch: 'delete' } }, podSchema);
  t.equal(deleted.status, undefined);
  const prim = strategicMergePatch(original, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } }, podSchema);
  t.same((prim.metadata as JsonObject).finalizers, ['b']);
  t.equal(codeOf(() => strategicMergePatch(original, { status: { conditions: [{ status: 'True' }] } }, podSchema)), 422, 'merge key required');
  t.equal(codeOf(() => strategicMergePatch(original, { status: { $patch: 'bogus' } }, podSchema)), 400);
});

t.test('selectors', async (t) => {
  const sel = parseLabelSelector('app=web, tier!=db,env in (prod, staging),!canary,team');
  t.ok(sel.matches({ app: 'web', env: 'prod', team: 'a' }));
  t.notOk(sel.matches({ app: 'web', env: 'dev', team: 'a' }));
  t.notOk(sel.matches({ app: 'web', env: 'prod', team: 'a', canary: 'x' }));
  t.notOk(sel.matches({ app: 'web', env: 'prod', team: 'a', tier: 'db' }));
  t.ok(parseLabelSelector('a notin (x)').matches({}));
  t.ok(parseLabelSelector('').matches(undefined));
  t.equal(codeOf(() => parseLabelSelector('a=b=c')), 400);
  t.equal(codeOf(() => parseLabelSelector('in in')), 400);
  const fs = parseFieldSelector('spec.nodeName==n1,status.phase!=Failed', new Set(['spec.nodeName', 'status.phase']));
  t.equal(fs.requiredValue('spec.nodeName'), 'n1');
  t.ok(fs.matches((f) => (f === 'spec.nodeName' ? 'n1' : 'Running')));
  t.notOk(fs.matches((f) => (f === 'spec.nodeName' ? 'n1' : 'Failed')));
  t.same(parseFieldSelector('metadata.name=a\\,b', new Set(['metadata.name'])).requirements, [{ field: 'metadata.name', op: 'eq', value: 'a,b' }]);
  t.equal(codeOf(() => parseFieldSelector('nonsense', new Set())), 400);
});

t.test('pod QoS class', async (t) => {
  const withRes = (resources: JsonObject): JsonObject => ({ spec: { containers: [{ name: 'c', image: 'i', resources }] } });
  t.equal(podQOSClass(withRes({})), 'BestEffort');
  t.equal(podQOSClass(withRes({ requests: { cpu: '100m' } })), 'Burstable');
  t.equal(podQOSClass(withRes({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } })), 'Guaranteed');
  t.equal(podQOSClass(withRes({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } })), 'Burstable');
});

t.test('time fields: Time truncated to seconds in UTC, MicroTime needs six digits', async (t) => {
  const s = await withServer(t);
  const p = (await http(s, 'POST', '/api/v1/namespaces/default/pods', pod('p', { spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' } } }] } }))).body;
  t.equal(p.status.qosClass, 'Guaranteed', 'requests default to limits');
  t.same(p.spec.containers[0].resources.requests, { cpu: '1', memory: '1Gi' });
  const r = await http(
    s,
    'PATCH',
    '/api/v1/namespaces/default/pods/p/status',
    { status: { startTime: '2024-01-01T10:00:00.987+02:00', conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2024-01-01T00:00:00.5Z' }] } },
    'application/strategic-merge-patch+json',
  );
  t.equal(r.status, 200);
  t.equal(r.body.status.startTime, '2024-01-01T08:00:00Z');
  t.equal(r.body.status.conditions[0].lastTransitionTime, '2024-01-01T00:00:00Z');
  t.equal(r.body.status.conditions[0].lastProbeTime, null);
  // A patched object that does not decode is 422 Invalid on the field "patch" (a create or update body is 400).
  const bad = await http(s, 'PATCH', '/api/v1/namespaces/default/pods/p/status', { status: { startTime: 'yesterday' } }, 'application/merge-patch+json');
  t.equal(bad.status, 422);
  t.equal(bad.body.reason, 'Invalid');
  t.equal(bad.body.details.causes[0].field, 'patch');
  const ev = await http(s, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
    metadata: { name: 'e' },
    eventTime: '2024-01-01T00:00:00.123Z',
    reportingController: 'kubelet',
    reportingInstance: 'n',
    action: 'A',
    reason: 'R',
    regarding: { kind: 'Pod', name: 'p', namespace: 'default' },
    type: 'Normal',
  });
  t.equal(ev.status, 400);
  t.match(ev.body.message, /^Event in version "v1" cannot be handled as a Event: parsing time "2024-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00"/);
  const cm = await http(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'c' }, data: { startTime: 'not a time' } });
  t.equal(cm.status, 201, 'user data is not parsed as API time fields');
});

t.test('the CLI serves until SIGTERM and writes a kubeconfig', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'test-apiserver-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'kc.yaml');
  const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, '--port', '0', '--kubeconfig', kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`CLI did not start: ${out}`)), 20000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', () => reject(new Error(`CLI exited: ${out}`)));
  });
  const health = await http(url, 'GET', '/healthz');
  t.equal(health.body, 'ok');
  const kc = JSON.parse(await readFile(kubeconfig, 'utf8'));
  t.equal(kc.clusters[0].cluster.server, url);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});
