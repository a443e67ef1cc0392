import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  containerFieldPath,
  containerSpecFieldPath,
  emptyPodStatus,
  formatMicroTime,
  formatRFC3339Nano,
  formatTime,
  canonicalJson,
  deepEqual,
  hasRestartableInitContainer,
  isJsonObject,
  isNotExist,
  isRestartableInitContainer,
  podRef,
  shouldContainerBeRestarted,
  type ContainerStatus,
  type PodStatus,
} from '../src/index.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

t.test('wire timestamps: metav1.Time, MicroTime, RFC3339Nano', async (t) => {
  t.equal(formatTime(T0 + 1999), '2026-01-01T00:00:01Z', 'whole seconds, truncated');
  t.equal(formatTime(new Date(T0)), '2026-01-01T00:00:00Z');
  t.equal(formatTime('2026-01-01T00:00:00.900Z'), '2026-01-01T00:00:00Z');
  t.equal(formatMicroTime(T0 + 123), '2026-01-01T00:00:00.123000Z');
  t.equal(formatMicroTime(T0 + 0.5), '2026-01-01T00:00:00.000500Z');
  t.equal(formatRFC3339Nano(T0), '2026-01-01T00:00:00Z');
  t.equal(formatRFC3339Nano(T0 + 120), '2026-01-01T00:00:00.12Z', 'trailing zeros trimmed');
  t.equal(formatRFC3339Nano(T0 + 123, 456_789), '2026-01-01T00:00:00.123456789Z');
});

t.test('JSON values', async (t) => {
  t.ok(deepEqual({ a: [1, { b: null }], c: 'x' }, { c: 'x', a: [1, { b: null }] }), 'key order ignored');
  t.notOk(deepEqual({ a: 1 }, { a: 1, b: 2 }));
  t.notOk(deepEqual([1, 2], [2, 1]), 'list order matters');
  t.notOk(deepEqual({ a: 1 }, [1]));
  t.notOk(deepEqual({ a: null }, {}), 'null is a value');
  t.ok(isJsonObject({}));
  t.notOk(isJsonObject([]));
  t.notOk(isJsonObject(null));
});

t.test('deepEqual is reflect.DeepEqual over API objects', async (t) => {
  t.ok(deepEqual({ a: 1, b: undefined }, { a: 1 }), 'an undefined key is an absent one');
  t.ok(deepEqual(new Date(T0), new Date(T0)), 'Dates by time');
  t.notOk(deepEqual(new Date(T0), new Date(T0 + 1)));
  t.notOk(deepEqual(new Date(T0), formatTime(T0)), 'a Date is not its text');
  class Model {
    name = 'web';
  }
  t.ok(deepEqual(new Model(), { name: 'web' }), 'a model instance equals the same plain fields');
  t.notOk(deepEqual(NaN, NaN), 'NaN equals nothing, as in Go');
  t.notOk(deepEqual(undefined, null));
});

t.test('canonicalJson sorts keys and leaves out undefined (and with omitNull, null) members', async (t) => {
  t.equal(canonicalJson({ b: [{ d: 1, c: undefined }], a: null, t: new Date(T0) }), '{"a":null,"b":[{"d":1}],"t":"2026-01-01T00:00:00.000Z"}');
  t.equal(canonicalJson({ b: 1, a: null, c: { e: null, d: 2 } }, { omitNull: true }), '{"b":1,"c":{"d":2}}');
  t.equal(canonicalJson([undefined, null]), '[null,null]');
  t.equal(canonicalJson(undefined), 'null');
});

const pod = (spec: V1Pod['spec'], deleted = false): V1Pod => ({
  metadata: { name: 'web', namespace: 'default', uid: 'u1', ...(deleted ? { deletionTimestamp: new Date(T0) } : {}) },
  spec,
});

t.test('pod helpers: podRef, sidecars, container field paths', async (t) => {
  t.equal(podRef(pod({ containers: [] })), 'default/web');
  t.equal(podRef(undefined), '');
  const p = pod({ containers: [{ name: 'app' }], initContainers: [{ name: 'init' }, { name: 'proxy', restartPolicy: 'Always' }], ephemeralContainers: [{ name: 'debug' }] });
  t.ok(isRestartableInitContainer(p.spec!.initContainers![1]));
  t.notOk(isRestartableInitContainer(p.spec!.initContainers![0]));
  t.ok(hasRestartableInitContainer(p));
  t.notOk(hasRestartableInitContainer(pod({ containers: [] })));
  t.equal(containerFieldPath(p, 'app'), 'spec.containers{app}');
  t.equal(containerFieldPath(p, 'init'), 'spec.initContainers{init}');
  t.equal(containerFieldPath(p, 'debug'), 'spec.ephemeralContainers{debug}');
  t.equal(containerFieldPath(p, 'gone'), undefined, 'no such container: no field path (Go: no reference)');
  t.equal(containerSpecFieldPath(p, 'init'), 'spec.initContainers{init}');
  t.equal(containerSpecFieldPath(p, 'gone'), 'spec.containers{gone}', 'a container held but not in the spec is a regular one');
});

t.test('shouldContainerBeRestarted follows the restart policy, deletion and sidecars', async (t) => {
  const status = (state: ContainerStatus['state'], exitCode = 0): PodStatus => ({
    ...emptyPodStatus('u1'),
    containerStatuses: [{ id: { type: 'x', id: '1' }, name: 'app', state, createdAt: T0, startedAt: T0, exitCode, image: '', imageId: '', imageRef: '', hash: '', restartCount: 0 }],
  });
  const app = { name: 'app' };
  t.ok(shouldContainerBeRestarted(app, pod({ containers: [app] }), emptyPodStatus('u1')), 'never started');
  t.notOk(shouldContainerBeRestarted(app, pod({ containers: [app] }), status('running')), 'running');
  t.ok(shouldContainerBeRestarted(app, pod({ containers: [app] }), status('created')), 'created but not started');
  t.ok(shouldContainerBeRestarted(app, pod({ containers: [app] }), status('exited', 0)), 'Always');
  t.notOk(shouldContainerBeRestarted(app, pod({ containers: [app], restartPolicy: 'Never' }), status('exited', 1)), 'Never');
  t.notOk(shouldContainerBeRestarted(app, pod({ containers: [app], restartPolicy: 'OnFailure' }), status('exited', 0)), 'OnFailure, succeeded');
  t.ok(shouldContainerBeRestarted(app, pod({ containers: [app], restartPolicy: 'OnFailure' }), status('exited', 1)), 'OnFailure, failed');
  t.notOk(shouldContainerBeRestarted(app, pod({ containers: [app] }, true), status('exited', 1)), 'a deleted pod restarts nothing');
  const sidecar = { name: 'app', restartPolicy: 'Always' };
  t.ok(shouldContainerBeRestarted(sidecar, pod({ containers: [], initContainers: [sidecar], restartPolicy: 'Never' }), status('exited', 0)), 'a sidecar restarts whatever the pod policy');
});

t.test('isNotExist', async (t) => {
  t.ok(isNotExist(Object.assign(new Error('nope'), { code: 'ENOENT' })));
  t.notOk(isNotExist(Object.assign(new Error('denied'), { code: 'EACCES' })));
  t.notOk(isNotExist(undefined));
});
