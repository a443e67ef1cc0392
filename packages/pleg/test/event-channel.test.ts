import t from 'tap';
import { EventChannel } from '../src/index.js';
import { FakePLEG } from '../src/testing.js';

t.test('bounded, FIFO, drops and counts when full', async (t) => {
  const ch = new EventChannel<number>(3);
  t.ok(ch.push(1));
  t.ok(ch.push(2));
  t.ok(ch.push(3));
  t.notOk(ch.push(4), 'full');
  t.equal(ch.dropped, 1);
  t.equal(ch.length, 3);
  t.equal(await ch.receive(), 1);
  t.ok(ch.push(5), 'room again, the ring wraps');
  t.same([ch.tryReceive(), ch.tryReceive(), ch.tryReceive(), ch.tryReceive()], [2, 3, 5, undefined]);
  t.throws(() => new EventChannel(0), /positive integer/);
});

t.test('a waiting receiver gets the next push directly, even at capacity 1', async (t) => {
  const ch = new EventChannel<string>(1);
  const pending = ch.receive();
  t.ok(ch.push('a'));
  t.ok(ch.push('b'), 'the first one went to the receiver, not the buffer');
  t.equal(await pending, 'a');
  t.equal(ch.length, 1);
});

t.test('abort and close', async (t) => {
  const ch = new EventChannel<number>(2);
  const controller = new AbortController();
  const pending = ch.receive(controller.signal);
  controller.abort();
  await t.rejects(pending, { name: 'AbortError' });
  await t.rejects(ch.receive(controller.signal), { name: 'AbortError' });
  t.ok(ch.push(1), 'the aborted receiver took nothing');

  const items: number[] = [];
  const consumer = (async () => {
    for await (const item of ch.iterate()) items.push(item);
  })();
  await new Promise((resolve) => setImmediate(resolve));
  ch.push(2);
  ch.close();
  await consumer;
  t.same(items, [1, 2]);
  t.notOk(ch.push(3), 'closed');
  t.ok(ch.isClosed);
  t.equal(await ch.receive(), undefined);
});

t.test('FakePLEG', async (t) => {
  const pleg = new FakePLEG({ channelCapacity: 1 });
  t.ok(pleg.push({ id: 'a', type: 'ContainerStarted', data: 'c' }));
  t.notOk(pleg.push({ id: 'a', type: 'ContainerDied', data: 'c' }));
  t.equal(pleg.droppedEvents, 1);
  pleg.setHealthy(false);
  t.equal(pleg.healthy().error?.message, 'pleg is not healthy');
  pleg.setHealthy(true);
  t.same(pleg.healthy(), { healthy: true });
  let relisted = 0;
  pleg.onRelist = () => {
    relisted++;
  };
  await pleg.relist();
  t.equal(relisted, 1);
  t.same(await pleg.updateCache(undefined, 'a'), { updated: true });
  t.same(pleg.updateCacheCalls, [{ pod: undefined, uid: 'a' }]);
  pleg.start();
  t.ok(pleg.started);
  await pleg.stop();
  t.notOk(pleg.started);
  const seen: string[] = [];
  pleg.close();
  for await (const event of pleg.watch()) seen.push(event.type);
  t.same(seen, ['ContainerStarted']);
});
