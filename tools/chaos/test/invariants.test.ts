// The invariants' logic on given API objects (no cluster): restart counts, statuses against the runtime, pods run once.
import t from 'tap';
import { PodObserver, podsRunOnce, statusDisagreements, type RuntimeView } from '../src/invariants.js';
import type { ChaosNode } from '../src/node.js';

type Json = Record<string, any>;

const pod = (restartCount: number, state: Json, extra: Json = {}): Json => ({
  metadata: { name: 'web', uid: 'u1' },
  spec: { containers: [{ name: 'httpd' }] },
  status: { phase: 'Running', containerStatuses: [{ name: 'httpd', restartCount, state, containerID: 'containerd://c1', ...extra }] },
});

function observer(sequence: Json[][]): PodObserver {
  let i = 0;
  const node = { namespace: 'ns', get: async () => ({ items: sequence[Math.min(i++, sequence.length - 1)] }) } as unknown as ChaosNode;
  return new PodObserver(node);
}

t.test('a restart count that goes down is a reset', async (t) => {
  const o = observer([[pod(2, { running: {} })], [pod(1, { running: {} })]]);
  await o.sample();
  await o.sample();
  t.notOk(o.result().held);
  t.match(o.result().detail, /web\/httpd \(u1\): 2 -> 1/);
});

t.test("a restart inferred for a container in an unknown state (Go's ContainerStatusUnknown) may be withdrawn once", async (t) => {
  const unknown = { terminated: { reason: 'ContainerStatusUnknown', exitCode: 137 } };
  const o = observer([[pod(0, { running: {} })], [pod(1, unknown)], [pod(0, { terminated: { reason: 'Completed', exitCode: 0 } })]]);
  for (let i = 0; i < 3; i++) await o.sample();
  t.ok(o.result().held, o.result().detail);
  t.match(o.result().detail, /withdrawn/);
});

t.test('a real restart is not withdrawable', async (t) => {
  const o = observer([[pod(0, { running: {} })], [pod(1, { running: {} }, { lastState: { terminated: { reason: 'Error', exitCode: 1 } } })], [pod(0, { running: {} })]]);
  for (let i = 0; i < 3; i++) await o.sample();
  t.notOk(o.result().held);
});

const view = (running: Record<string, Record<string, string[]>>, ready: Record<string, string[]> = {}): RuntimeView => ({
  readySandboxes: new Map(Object.entries(ready)),
  sandboxes: new Map(Object.entries(ready)),
  running: new Map(Object.entries(running).map(([uid, byName]) => [uid, new Map(Object.entries(byName))])),
  containers: new Map(Object.entries(running).map(([uid, byName]) => [uid, Object.values(byName).flat()])),
});

t.test('statusDisagreements: the API and the runtime must name the same running container', async (t) => {
  t.same(statusDisagreements([pod(0, { running: {} })], view({ u1: { httpd: ['c1'] } })), []);
  t.match(statusDisagreements([pod(0, { running: {} })], view({})), [/the status says running .* the runtime runs nothing/]);
  t.match(statusDisagreements([pod(0, { waiting: {} })], view({ u1: { httpd: ['c1'] } })), [/the runtime runs c1/]);
  t.match(statusDisagreements([pod(0, { running: {} })], view({ u1: { httpd: ['c2'] } })), [/the status names c1, the runtime runs c2/]);
});

t.test('podsRunOnce: one ready sandbox and one running container per spec container; nothing for unknown pods', async (t) => {
  t.ok(podsRunOnce([pod(0, { running: {} })], view({ u1: { httpd: ['c1'] } }, { u1: ['s1'] })).held);
  t.notOk(podsRunOnce([pod(0, { running: {} })], view({ u1: { httpd: ['c1', 'c2'] } }, { u1: ['s1'] })).held, 'twice');
  t.notOk(podsRunOnce([pod(0, { running: {} })], view({ u1: { httpd: ['c1'] }, u2: { httpd: ['c9'] } }, { u1: ['s1'] })).held, 'a pod the API does not have');
});
