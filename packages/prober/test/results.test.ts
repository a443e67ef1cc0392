import t from 'tap';
import { ResultsManager, type ProbeResultLookup, type ResultUpdate } from '../src/index.js';

const pod = { metadata: { uid: 'pod-1' } };

t.test('get/set/remove and updates only on change', async (t) => {
  const m = new ResultsManager();
  const seen: ResultUpdate[] = [];
  const unsubscribe = m.subscribe((u) => seen.push(u));
  t.equal(m.get('containerd://a'), undefined);
  m.set('containerd://a', 'unknown', pod);
  m.set('containerd://a', 'unknown', pod);
  m.set('containerd://a', 'success', pod);
  m.set('containerd://a', 'failure', { uid: 'pod-1' });
  t.equal(m.get('containerd://a'), 'failure');
  t.equal(m.size, 1);
  t.same(seen.map((u) => u.result), ['unknown', 'success', 'failure']);
  t.same(seen[0], { containerId: 'containerd://a', result: 'unknown', podUID: 'pod-1' });
  m.remove('containerd://a');
  t.equal(m.get('containerd://a'), undefined);
  unsubscribe();
  m.set('containerd://a', 'success', pod);
  t.equal(seen.length, 3, 'unsubscribed');
});

t.test('lookup is the runtime manager\'s ProbeResultLookup: bound, unknown reads as undefined', async (t) => {
  const m = new ResultsManager();
  const lookup: ProbeResultLookup = m.lookup;
  m.set('containerd://a', 'unknown', pod);
  t.equal(lookup('containerd://a'), undefined);
  m.set('containerd://a', 'failure', pod);
  t.equal(lookup('containerd://a'), 'failure');
  t.equal(lookup('containerd://b'), undefined);
});

t.test('updates(): async iteration, bounded buffers that drop and count, close', async (t) => {
  const m = new ResultsManager({ bufferSize: 2 });
  const it = m.updates()[Symbol.asyncIterator]();
  m.set('x://1', 'success', pod);
  m.set('x://2', 'success', pod);
  m.set('x://3', 'success', pod);
  t.equal(m.droppedUpdates, 1, 'third update dropped: buffer of 2');
  t.equal((await it.next()).value?.containerId, 'x://1');
  t.equal((await it.next()).value?.containerId, 'x://2');
  const pending = it.next();
  m.set('x://4', 'failure', pod);
  t.same((await pending).value, { containerId: 'x://4', result: 'failure', podUID: 'pod-1' });
  const last = it.next();
  m.close();
  t.equal((await last).done, true);

  const controller = new AbortController();
  const collected: string[] = [];
  const loop = (async () => {
    for await (const u of m.updates(controller.signal)) collected.push(u.containerId);
  })();
  m.set('x://5', 'success', pod);
  await new Promise((r) => setImmediate(r));
  controller.abort();
  await loop;
  t.same(collected, ['x://5']);

  const aborted = new AbortController();
  aborted.abort();
  for await (const _ of m.updates(aborted.signal)) t.fail('no updates after abort');
});

t.test('a throwing listener does not stop others', async (t) => {
  const m = new ResultsManager();
  let got = 0;
  m.subscribe(() => {
    throw new Error('bad listener');
  });
  m.subscribe(() => got++);
  m.set('x://1', 'success', pod);
  t.equal(got, 1);
});
