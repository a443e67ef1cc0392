import t from 'tap';
import { parkWaiter, type Waiter } from '../src/index.js';

t.test('parkWaiter: a producer resolves the parked receiver', async (t) => {
  const waiters: Waiter<string>[] = [];
  const controller = new AbortController();
  const received = parkWaiter(waiters, controller.signal);
  t.equal(waiters.length, 1);
  waiters.shift()!.resolve('item');
  t.equal(await received, 'item');
  controller.abort();
  t.pass('aborting after delivery is harmless (the listener is gone)');
});

t.test('parkWaiter: an abort removes the receiver and rejects with the reason', async (t) => {
  const waiters: Waiter<string>[] = [];
  const controller = new AbortController();
  const first = parkWaiter(waiters, controller.signal);
  const second = parkWaiter(waiters);
  controller.abort(new Error('stopping'));
  await t.rejects(first, { message: 'stopping' });
  t.equal(waiters.length, 1, 'only the aborted receiver left');
  waiters.shift()!.resolve('next');
  t.equal(await second, 'next', 'the other receiver still gets the next item');
  await t.rejects(parkWaiter(waiters, AbortSignal.abort(new Error('already'))), { message: 'already' });
  t.equal(waiters.length, 0, 'an already aborted signal parks nothing');
});
