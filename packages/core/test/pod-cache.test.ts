import t from 'tap';
import { PodCache, emptyPodStatus, type PodStatus } from '../src/index.js';
import { FakeClock } from '../src/testing.js';

const status = (uid: string, timestamp: number): PodStatus => ({ ...emptyPodStatus(uid), name: 'web', namespace: 'default', timestamp });

/** Whether a promise has settled, after letting continuations run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

t.test('get returns the stored status, or an empty one for unknown pods', async (t) => {
  const cache = new PodCache();
  t.same(cache.get('u1'), { status: emptyPodStatus('u1') });
  const s = status('u1', 10);
  t.ok(cache.set('u1', s, undefined, 10));
  t.equal(cache.get('u1').status, s);
  t.notOk('error' in cache.get('u1'));
  t.same(cache.getEntry('u1'), { status: s, error: undefined, modified: 10 });
  t.equal(cache.getEntry('nope'), undefined);
});

t.test('an error is returned with an empty status when no status was stored', async (t) => {
  const cache = new PodCache();
  const err = new Error('rpc unavailable');
  cache.set('u1', undefined, err, 5);
  t.same(cache.get('u1'), { status: emptyPodStatus('u1'), error: err });
  t.same(cache.getAll(), [], 'getAll skips error-only entries');
});

t.test('set ignores an older timestamp than the existing entry', async (t) => {
  const cache = new PodCache();
  const fresh = status('u1', 20);
  t.ok(cache.set('u1', fresh, undefined, 20));
  t.notOk(cache.set('u1', status('u1', 10), undefined, 10));
  t.equal(cache.get('u1').status, fresh);
  t.ok(cache.set('u1', status('u1', 20), undefined, 20), 'equal timestamps replace');
});

t.test('delete removes the entry; getAll lists statuses', async (t) => {
  const cache = new PodCache();
  cache.set('u1', status('u1', 1), undefined, 1);
  cache.set('u2', status('u2', 1), undefined, 1);
  t.same(
    cache.getAll().map((s) => s.id),
    ['u1', 'u2'],
  );
  cache.delete('u1');
  t.same(cache.get('u1'), { status: emptyPodStatus('u1') });
  t.equal(cache.getAll().length, 1);
});

t.test('getNewerThan', async (t) => {
  t.test('resolves at once when the entry is newer', async (t) => {
    const cache = new PodCache();
    cache.set('u1', status('u1', 100), undefined, 100);
    t.equal((await cache.getNewerThan('u1', 99)).status.timestamp, 100);
  });

  t.test('resolves at once when the global timestamp is newer, with an empty status if none', async (t) => {
    const cache = new PodCache();
    cache.updateTime(100);
    t.equal(cache.timestamp(), 100);
    t.same(await cache.getNewerThan('u1', 50), { status: emptyPodStatus('u1') });
    cache.set('u2', status('u2', 10), undefined, 10);
    t.equal((await cache.getNewerThan('u2', 50)).status.timestamp, 10, 'an old entry counts once a relist covered it');
  });

  t.test('waits for a set with a newer timestamp (strictly newer)', async (t) => {
    const cache = new PodCache();
    cache.set('u1', status('u1', 100), undefined, 100);
    const waiting = cache.getNewerThan('u1', 100);
    t.notOk(await settled(waiting), 'equal is not newer');
    t.equal(cache.pendingWaiters(), 1);
    cache.set('u1', status('u1', 100), undefined, 100);
    t.notOk(await settled(waiting), 'a set at the same time is not newer either');
    cache.set('u2', status('u2', 500), undefined, 500);
    t.notOk(await settled(waiting), 'another pod does not count');
    const err = new Error('partial');
    cache.set('u1', status('u1', 101), err, 101);
    const result = await waiting;
    t.equal(result.status.timestamp, 101);
    t.equal(result.error, err);
    t.equal(cache.pendingWaiters(), 0);
  });

  t.test('waits for updateTime past minTime and wakes only the satisfied waiters', async (t) => {
    const cache = new PodCache();
    const early = cache.getNewerThan('u1', 100);
    const late = cache.getNewerThan('u2', 300);
    cache.updateTime(100);
    t.notOk(await settled(early));
    cache.updateTime(200);
    t.same(await early, { status: emptyPodStatus('u1') });
    t.notOk(await settled(late));
    t.equal(cache.pendingWaiters(), 1);
    cache.updateTime(301);
    t.same(await late, { status: emptyPodStatus('u2') });
    t.equal(cache.pendingWaiters(), 0);
  });

  t.test('several waiters on one pod resolve with the same entry', async (t) => {
    const cache = new PodCache();
    const a = cache.getNewerThan('u1', 10);
    const b = cache.getNewerThan('u1', 20);
    const c = cache.getNewerThan('u1', 40);
    const s = status('u1', 30);
    cache.set('u1', s, undefined, 30);
    t.equal((await a).status, s);
    t.equal((await b).status, s);
    t.notOk(await settled(c));
    t.equal(cache.pendingWaiters(), 1);
    cache.updateTime(41);
    t.equal((await c).status, s);
  });

  t.test('rejects on abort and forgets the waiter', async (t) => {
    const cache = new PodCache();
    const controller = new AbortController();
    const waiting = cache.getNewerThan('u1', 100, controller.signal);
    const other = cache.getNewerThan('u1', 100);
    t.equal(cache.pendingWaiters(), 2);
    controller.abort();
    await t.rejects(waiting, { name: 'AbortError' });
    t.equal(cache.pendingWaiters(), 1);
    cache.updateTime(101);
    await other;
    await t.rejects(cache.getNewerThan('u1', 0, AbortSignal.abort(new Error('stop'))), /stop/);
    t.equal(cache.pendingWaiters(), 0);
  });

  t.test('a resolved waiter removes its abort listener', async (t) => {
    const cache = new PodCache();
    const controller = new AbortController();
    const waiting = cache.getNewerThan('u1', 1, controller.signal);
    cache.set('u1', status('u1', 2), undefined, 2);
    await waiting;
    controller.abort(); // would throw an unhandled rejection if the listener still rejected
    t.equal(cache.pendingWaiters(), 0);
  });
});

t.test('accepts a clock option', async (t) => {
  const clock = new FakeClock(0);
  const cache = new PodCache({ clock });
  t.equal(cache.clock, clock);
  cache.set('u1', status('u1', clock.now()), undefined, clock.now());
  t.equal(cache.getEntry('u1')?.modified, 0);
});
