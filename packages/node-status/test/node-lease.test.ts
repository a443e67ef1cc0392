// NodeLeaseController rules against FakeKubeClient and FakeClock.
import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { NodeLeaseController, type NodeLeaseControllerOptions } from '../src/index.js';
import { FakeKubeClient } from '../src/testing.js';
import type { TeardownHost } from './helpers.js';

function setup(t: TeardownHost, extra: Partial<NodeLeaseControllerOptions> = {}, withNode = true) {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00.250Z'));
  const client = new FakeKubeClient(() => clock.now());
  if (withNode) client.putNode({ metadata: { name: 'node-1' } });
  const logger = new RecordingLogger();
  const lease = new NodeLeaseController({ nodeName: 'node-1', kubeClient: client, clock, logger, ...extra });
  t.teardown(() => lease.stop());
  const stored = () => client.lease('kube-node-lease', 'node-1') as Record<string, any> | undefined;
  return { clock, client, logger, lease, stored };
}

t.test('creates the lease owned by the Node, with a six-digit MicroTime renewTime', async (t) => {
  const { clock, client, lease, stored } = setup(t);
  lease.start();
  await clock.advance(0);
  const uid = client.node('node-1')!.metadata!.uid;
  t.same(
    client.calls.map((c) => c.method),
    ['getLease', 'getNode', 'createLease'],
  );
  t.match(stored(), {
    metadata: { name: 'node-1', namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid }] },
    spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40, renewTime: '2026-01-01T00:00:00.250000Z' },
  });
  t.match(client.callsOf('createLease')[0].body, /"renewTime":"2026-01-01T00:00:00\.250000Z"/);
  t.equal(lease.latestLease()!.metadata!.resourceVersion, stored()!.metadata.resourceVersion);
});

t.test('renews every 10 s (4% jitter) with a PUT and no GET', async (t) => {
  const { clock, client, lease, stored } = setup(t);
  lease.start();
  await clock.advance(0);
  client.calls.length = 0;
  await clock.advance(60_000);
  const puts = client.callsOf('updateLease');
  t.ok(puts.length >= 5 && puts.length <= 6, `${puts.length} renewals in 60 s`);
  t.equal(client.callsOf('getLease').length, 0);
  t.equal(client.callsOf('getNode').length, 0, 'owner reference already set: no node GET');
  const renew = Date.parse(stored()!.spec.renewTime);
  t.ok(clock.now() - renew <= 10_400);
  for (const p of puts) t.match(p.body, /"renewTime":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"/);
});

t.test('custom duration and interval', async (t) => {
  const { clock, client, lease, stored } = setup(t, { leaseDurationSeconds: 20, holderIdentity: 'me' });
  lease.start();
  await clock.advance(0);
  t.match(stored()!.spec, { holderIdentity: 'me', leaseDurationSeconds: 20 });
  client.calls.length = 0;
  await clock.advance(5300);
  t.equal(client.callsOf('updateLease').length, 1, 'renew interval = 25% of the duration');
});

t.test('a conflict re-reads the lease and retries', async (t) => {
  const { clock, client, lease, stored } = setup(t);
  lease.start();
  await clock.advance(0);
  client.touchLease('kube-node-lease', 'node-1');
  client.calls.length = 0;
  await clock.advance(10_400);
  t.same(
    client.calls.map((c) => c.method),
    ['updateLease', 'getLease', 'updateLease'],
  );
  t.equal(lease.latestLease()!.metadata!.resourceVersion, stored()!.metadata.resourceVersion);
});

t.test('five failed renewals: error, onRepeatedHeartbeatFailure, then the next round falls back to GET', async (t) => {
  const failures: number[] = [];
  const { clock, client, lease, logger } = setup(t, { onRepeatedHeartbeatFailure: () => failures.push(1) });
  lease.start();
  await clock.advance(0);
  client.calls.length = 0;
  client.failNext(10, 500, ['updateLease']);
  await clock.advance(10_400);
  t.same(
    client.calls.map((c) => c.method),
    ['updateLease', 'updateLease', 'updateLease', 'updateLease', 'updateLease', 'getLease', 'updateLease', 'updateLease', 'updateLease', 'updateLease', 'updateLease'],
    'latest lease (5 PUTs), then ensure (GET) and 5 more PUTs',
  );
  t.equal(failures.length, 8);
  t.ok(logger.find('Failed to update lease using latest lease, fallback to ensure lease'));
  t.ok(logger.find('Will retry updating lease'));
  client.calls.length = 0;
  await clock.advance(10_400);
  t.same(
    client.calls.map((c) => c.method),
    ['updateLease'],
    'recovered',
  );
});

t.test('API server down: ensure backs off 200 ms doubling to 7 s', async (t) => {
  const { clock, client, lease, stored } = setup(t);
  client.down = true;
  lease.start();
  const times: number[] = [];
  const start = clock.now();
  for (let i = 0; i < 400 && times.length < 8; i++) {
    const before = client.calls.length;
    await clock.advance(100);
    if (client.calls.length > before) times.push(clock.now() - start);
  }
  // The first try at once (seen after the first 100 ms step), then sleeps of 200, 400, ... 6400, 7000 ms.
  t.same(times, [100, 200, 600, 1400, 3000, 6200, 12600, 19600]);
  client.down = false;
  await clock.advance(7000);
  t.ok(stored(), 'created once the API server is back');
});

t.test('no Node yet: the lease is not created without its owner; it is on a later round', async (t) => {
  const { clock, client, lease, stored, logger } = setup(t, {}, false);
  lease.start();
  await clock.advance(0);
  t.equal(stored(), undefined);
  t.ok(logger.find('Failed to get node when trying to set owner ref to the node lease'));
  client.putNode({ metadata: { name: 'node-1' } });
  await clock.advance(10_400);
  t.equal(stored()!.metadata.ownerReferences[0].uid, client.node('node-1')!.metadata!.uid);
});

t.test('an existing lease without owner gets one on renewal; ownNodeLease false leaves it', async (t) => {
  {
    const { clock, client, lease, stored } = setup(t);
    await client.createLease({ metadata: { name: 'node-1', namespace: 'kube-node-lease' }, spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40 } });
    lease.start();
    await clock.advance(0);
    t.same(
      client.calls.map((c) => c.method),
      ['createLease', 'getLease', 'getNode', 'updateLease'],
    );
    t.equal(stored()!.metadata.ownerReferences.length, 1);
    await lease.stop();
  }
  {
    const { clock, client, lease, stored } = setup(t, { ownNodeLease: false });
    lease.start();
    await clock.advance(0);
    t.equal(client.callsOf('getNode').length, 0);
    t.equal(stored()!.metadata.ownerReferences, undefined);
  }
});

t.test('stop() leaves no timers; start() again works', async (t) => {
  const { clock, client, lease } = setup(t);
  client.down = true;
  lease.start();
  await clock.advance(3000);
  await lease.stop();
  t.equal(clock.pendingTimers(), 0);
  const n = client.calls.length;
  await clock.advance(30_000);
  t.equal(client.calls.length, n);
  client.down = false;
  lease.start();
  await clock.advance(0);
  t.ok(client.lease('kube-node-lease', 'node-1'));
});
