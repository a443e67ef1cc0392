// The Reflector against a fake ListerWatcher on a FakeClock: list, watch resume, bookmarks, 410
// re-list, error backoff, stop; and the client-node Watch adapter against a fake Watch.
import t from 'tap';
import { abortReason, clientNodeWatch, metaNamespaceKey, Reflector, type ListerWatcher, type StoreChange, type WatchEvent, type WatchEventType } from '../src/index.js';
import { FakeClock, RecordingLogger } from '../src/testing.js';

interface Obj {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
  value?: string;
}

const obj = (namespace: string, name: string, resourceVersion: string, value = ''): Obj => ({ metadata: { namespace, name, resourceVersion }, value });

interface FakeWatch {
  opts: { resourceVersion: string; timeoutSeconds: number };
  signal: AbortSignal;
  active: boolean;
  emit(type: WatchEventType, object: unknown): void;
  /** The server ends the watch (undefined) or it breaks (an error). */
  end(err?: unknown): void;
}

class FakeListerWatcher implements ListerWatcher<Obj> {
  items: Obj[] = [];
  resourceVersion = '1';
  readonly lists: string[] = [];
  readonly watches: FakeWatch[] = [];
  /** Errors the next lists reject with, in order. */
  listErrors: unknown[] = [];
  /** Errors the next watches reject with at once, in order. */
  watchErrors: unknown[] = [];
  /** When set, lists wait for this promise (a hung API server). */
  listGate: Promise<void> | undefined;

  async list(opts: { resourceVersion: string }): Promise<{ items: Obj[]; resourceVersion: string }> {
    this.lists.push(opts.resourceVersion);
    if (this.listGate) await this.listGate;
    const err = this.listErrors.shift();
    if (err) throw err;
    return { items: [...this.items], resourceVersion: this.resourceVersion };
  }

  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: WatchEvent<Obj>) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: FakeWatch = {
        opts,
        signal,
        active: true,
        emit: (type, object) => {
          if (!w.active) throw new Error('emit on an ended watch');
          try {
            onEvent({ type, object: object as Obj });
          } catch (err) {
            w.end(err);
          }
        },
        end: (err) => {
          if (!w.active) return;
          w.active = false;
          if (err) reject(err);
          else resolve();
        },
      };
      this.watches.push(w);
      signal.addEventListener('abort', () => w.end(abortReason(signal)), { once: true });
      const err = this.watchErrors.shift();
      if (err) w.end(err);
    });
  }

  active(): FakeWatch[] {
    return this.watches.filter((w) => w.active);
  }

  last(): FakeWatch {
    return this.watches[this.watches.length - 1];
  }
}

function setup(opts: { random?: number } = {}) {
  const clock = new FakeClock(0);
  const lw = new FakeListerWatcher();
  const logger = new RecordingLogger();
  const changes: StoreChange<Obj>[] = [];
  const reflector = new Reflector<Obj>({
    listerWatcher: lw,
    description: 'things',
    clock,
    logger,
    backoffJitter: 0,
    random: () => opts.random ?? 0.5,
    onChange: (c) => changes.push(c),
  });
  return { clock, lw, logger, changes, reflector };
}

const names = (r: Reflector<Obj>, ns = '') => r.list(ns).map((o) => o.metadata?.name).sort();
const serverError = (code: number, message = 'boom') => Object.assign(new Error(message), { statusCode: code });

t.test('lists, then watches from the list resourceVersion and follows adds, updates and deletes', async (t) => {
  const { clock, lw, changes, reflector } = setup();
  lw.items = [obj('a', 'x', '5'), obj('b', 'y', '6')];
  lw.resourceVersion = '10';
  t.equal(reflector.hasSynced(), false);
  reflector.start();
  await clock.flush();
  t.ok(reflector.hasSynced());
  t.same(lw.lists, ['0'], 'the first list may come from the watch cache');
  t.equal(lw.watches.length, 1);
  t.same(lw.last().opts, { resourceVersion: '10', timeoutSeconds: 450 }, 'timeout in [min, 2*min]: 300 s * (1 + 0.5)');
  t.same(names(reflector), ['x', 'y']);
  t.same(names(reflector, 'a'), ['x']);
  t.same(reflector.list('none'), []);
  t.same(changes, [{ type: 'replaced', items: lw.items }]);

  lw.last().emit('ADDED', obj('a', 'z', '11', 'new'));
  lw.last().emit('MODIFIED', obj('a', 'x', '12', 'changed'));
  lw.last().emit('DELETED', obj('b', 'y', '13'));
  lw.last().emit('DELETED', obj('b', 'never-seen', '14'));
  t.same(names(reflector), ['x', 'z']);
  t.equal(reflector.get('a', 'x')?.value, 'changed');
  t.equal(reflector.get('b', 'y'), undefined);
  t.equal(reflector.lastSyncResourceVersion(), '14');
  t.same(
    changes.slice(1).map((c) => (c.type === 'replaced' ? c.type : `${c.type} ${c.key}`)),
    ['added a/z', 'updated a/x', 'deleted b/y'],
    'a delete of an unknown object changes nothing',
  );
  t.same(reflector.stats(), { lists: 1, watches: 1, events: 4, bookmarks: 0, gone: 0, errors: 0, ignoredEvents: 0, handlerErrors: 0 });
  await reflector.stop();
});

t.test('a watch event of an unknown type is ignored, counted and named in a warning; the watch goes on', async (t) => {
  const { clock, lw, logger, reflector } = setup();
  reflector.start();
  await clock.flush();
  lw.last().emit('SURPRISE' as WatchEventType, obj('a', 'x', '7'));
  t.ok(lw.last().active);
  t.equal(reflector.get('a', 'x'), undefined, 'not stored');
  t.equal(reflector.stats().ignoredEvents, 1);
  t.match(logger.find('Unknown watch event type; ignoring'), { level: 'warn', kv: { type: 'SURPRISE' } });
  await reflector.stop();
});

t.test('random watch timeouts span [min, 2*min]', async (t) => {
  for (const [random, expected] of [
    [0, 300],
    [0.999, 599],
  ] as const) {
    const { clock, lw, reflector } = setup({ random });
    reflector.start();
    await clock.flush();
    t.equal(lw.last().opts.timeoutSeconds, expected);
    await reflector.stop();
  }
});

t.test('a watch the server ends, or a bookmark, resumes from the last resourceVersion without a re-list', async (t) => {
  const { clock, lw, reflector } = setup();
  lw.resourceVersion = '10';
  reflector.start();
  await clock.flush();
  lw.last().emit('ADDED', obj('a', 'x', '11'));
  lw.last().emit('BOOKMARK', { metadata: { resourceVersion: '20' } });
  t.same(names(reflector), ['x'], 'a bookmark stores nothing');
  lw.last().end();
  await clock.flush();
  t.equal(lw.watches.length, 2);
  t.equal(lw.last().opts.resourceVersion, '20');
  t.equal(clock.pendingTimers(), 0, 'a normal end does not back off');

  // A broken connection backs off, then resumes from where it was, still without a list.
  lw.last().end(new Error('connection reset'));
  await clock.flush();
  t.equal(lw.watches.length, 2, 'waiting out the backoff');
  await clock.advance(800);
  t.equal(lw.watches.length, 3);
  t.equal(lw.last().opts.resourceVersion, '20');
  t.same(lw.lists, ['0']);
  t.match(reflector.stats(), { lists: 1, watches: 3, bookmarks: 1, errors: 1 });
  await reflector.stop();
});

t.test('410 Gone (an ERROR event or a rejected watch) re-lists from the latest state and replaces the store', async (t) => {
  const { clock, lw, logger, changes, reflector } = setup();
  lw.items = [obj('a', 'x', '5'), obj('a', 'y', '6')];
  lw.resourceVersion = '10';
  reflector.start();
  await clock.flush();

  lw.items = [obj('a', 'y', '30'), obj('a', 'w', '31')];
  lw.resourceVersion = '40';
  lw.last().emit('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 10 (25)' });
  await clock.flush();
  t.same(lw.lists, ['0', ''], 'after a 410 the list asks for the latest');
  t.same(names(reflector), ['w', 'y']);
  t.equal(lw.last().opts.resourceVersion, '40');
  t.equal(changes.filter((c) => c.type === 'replaced').length, 2);
  t.ok(logger.find('Watch of things expired (410 Gone); re-listing'));
  t.equal(clock.pendingTimers(), 0, 'no backoff for a 410');

  lw.last().end(serverError(410, 'Gone'));
  await clock.flush();
  t.same(lw.lists, ['0', '', '']);
  t.equal(reflector.stats().gone, 2);

  // Any other ERROR event ends the watch with an error and backs off.
  lw.last().emit('ERROR', { kind: 'Status', code: 500, message: 'internal error' });
  await clock.flush();
  t.equal(reflector.stats().errors, 1);
  t.match(logger.find('List/watch of things failed; retrying')?.kv, { err: 'watch error event: internal error', retryInMs: 800 });
  await reflector.stop();
});

t.test('failed lists back off 800 ms doubling to 30 s; not synced until a list succeeds; success resets', async (t) => {
  const { clock, lw, logger, reflector } = setup();
  lw.listErrors = Array.from({ length: 8 }, () => serverError(500));
  reflector.start();
  await clock.flush();
  const listedAt: number[] = [];
  for (let i = 0; i < 9; i++) {
    listedAt.push(clock.now());
    await clock.advance(clock.nextTimerAt() === undefined ? 0 : (clock.nextTimerAt() as number) - clock.now());
  }
  t.same(lw.lists.length, 9);
  t.ok(reflector.hasSynced());
  t.same(
    logger.entries.filter((e) => e.msg === 'List/watch of things failed; retrying').map((e) => e.kv.retryInMs),
    [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000],
  );
  t.equal(lw.active().length, 1, 'watching after the list succeeded');

  // The watch ends normally: the next failure starts from 800 again.
  lw.last().end();
  await clock.flush();
  lw.last().end(new Error('reset'));
  await clock.flush();
  t.equal(logger.entries[logger.entries.length - 1].kv.retryInMs, 800);
  await reflector.stop();
});

t.test('jittered backoff uses the injected random', async (t) => {
  const clock = new FakeClock(0);
  const lw = new FakeListerWatcher();
  lw.listErrors = [serverError(500)];
  const logger = new RecordingLogger();
  const reflector = new Reflector<Obj>({ listerWatcher: lw, clock, logger, random: () => 0.25 });
  reflector.start();
  await clock.flush();
  t.equal(logger.find(/failed; retrying/)?.kv.retryInMs, 1000, '800 + 0.25 * 1.0 * 800');
  await reflector.stop();
});

t.test('stop leaves nothing running: no timer, no watch; the store and hasSynced stay; restart resumes', async (t) => {
  const { clock, lw, reflector } = setup();
  lw.items = [obj('a', 'x', '5')];
  lw.resourceVersion = '10';
  reflector.start();
  await clock.flush();
  const watch = lw.last();
  await reflector.stop();
  t.notOk(watch.active);
  t.ok(watch.signal.aborted, 'the watch request was aborted');
  t.equal(clock.pendingTimers(), 0);
  t.notOk(reflector.isRunning());
  t.ok(reflector.hasSynced());
  t.same(names(reflector), ['x']);
  await reflector.stop();

  reflector.start();
  await clock.flush();
  t.equal(lw.active().length, 1);
  t.equal(lw.last().opts.resourceVersion, '10', 'a restart resumes the watch');
  t.same(lw.lists, ['0']);

  // Stopped while backing off.
  lw.last().end(new Error('broken'));
  await clock.flush();
  t.equal(clock.pendingTimers(), 1);
  await reflector.stop();
  t.equal(clock.pendingTimers(), 0, 'the backoff timer is cancelled');
  await clock.advance(60_000);
  t.equal(lw.watches.length, 2, 'nothing ran after stop');
});

t.test('stop does not wait for a hung list; start(signal) stops on abort', async (t) => {
  const { clock, lw, reflector } = setup();
  let release!: () => void;
  lw.listGate = new Promise<void>((resolve) => (release = resolve));
  const controller = new AbortController();
  reflector.start(controller.signal);
  await clock.flush();
  t.equal(lw.lists.length, 1);
  controller.abort();
  await reflector.stop();
  t.notOk(reflector.hasSynced(), 'the late list is not stored');
  release();
  await clock.flush();
  t.notOk(reflector.hasSynced());
  t.equal(lw.watches.length, 0);

  const aborted = new AbortController();
  aborted.abort();
  const r2 = new Reflector<Obj>({ listerWatcher: lw, clock });
  r2.start(aborted.signal);
  await r2.stop();
  t.equal(lw.lists.length, 1, 'an aborted signal starts nothing');
});

t.test('waitForSync: true once listed, false after the timeout', async (t) => {
  const { clock, lw, reflector } = setup();
  lw.listErrors = [serverError(500)];
  const early = reflector.waitForSync(500);
  const late = reflector.waitForSync(2000);
  reflector.start();
  await clock.advance(600);
  t.equal(await early, false);
  await clock.advance(400);
  t.equal(await late, true, 'listed after the 800 ms backoff');
  t.equal(await reflector.waitForSync(0), true);
  const controller = new AbortController();
  const r2 = new Reflector<Obj>({ listerWatcher: new FakeListerWatcher(), clock });
  const aborted = r2.waitForSync(1000, controller.signal);
  controller.abort();
  t.equal(await aborted, false);
  await reflector.stop();
  t.equal(clock.pendingTimers(), 0, 'no timers left by the waits');
});

t.test('an onChange that throws is logged and the watch goes on', async (t) => {
  const clock = new FakeClock(0);
  const lw = new FakeListerWatcher();
  const logger = new RecordingLogger();
  const reflector = new Reflector<Obj>({
    listerWatcher: lw,
    clock,
    logger,
    onChange: () => {
      throw new Error('handler bug');
    },
  });
  reflector.start();
  await clock.flush();
  lw.last().emit('ADDED', obj('a', 'x', '2'));
  t.ok(lw.last().active);
  t.ok(reflector.get('a', 'x'));
  t.ok(logger.find('Store change handler failed'));
  t.equal(reflector.stats().handlerErrors, 2, 'the list and the add');
  await reflector.stop();
});

t.test('metaNamespaceKey', async (t) => {
  t.equal(metaNamespaceKey(obj('ns', 'n', '1')), 'ns/n');
  t.equal(metaNamespaceKey({ metadata: { name: 'node' } }), 'node');
  t.equal(metaNamespaceKey({}), '');
});

type WatchCallback = (phase: string, apiObj: unknown) => void;

class FakeClientWatch {
  calls: { path: string; query: Record<string, unknown>; callback: WatchCallback; done: (err: unknown) => void; controller: AbortController }[] = [];
  failWith: unknown;

  watch(path: string, query: Record<string, string | number | boolean | undefined>, callback: WatchCallback, done: (err: unknown) => void): Promise<AbortController> {
    if (this.failWith) return Promise.reject(this.failWith);
    const controller = new AbortController();
    this.calls.push({ path, query, callback, done, controller });
    return Promise.resolve(controller);
  }
}

t.test('clientNodeWatch: query, deserialization, ERROR events, done and abort', async (t) => {
  const fake = new FakeClientWatch();
  const deserialize = (o: unknown): Obj => ({ ...(o as Obj), value: 'deserialized' });
  const watch = clientNodeWatch<Obj>(fake, '/api/v1/namespaces/ns/configmaps', deserialize, { fieldSelector: 'metadata.name=cm' });
  const events: WatchEvent<Obj>[] = [];
  const controller = new AbortController();
  const p = watch({ resourceVersion: '7', timeoutSeconds: 400 }, (e) => events.push(e), controller.signal);
  await new Promise((r) => setImmediate(r));
  t.equal(fake.calls.length, 1);
  t.equal(fake.calls[0].path, '/api/v1/namespaces/ns/configmaps');
  t.same(fake.calls[0].query, { fieldSelector: 'metadata.name=cm', resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 400 });
  fake.calls[0].callback('ADDED', obj('ns', 'cm', '8'));
  fake.calls[0].callback('ERROR', { code: 410 });
  t.same(events, [
    { type: 'ADDED', object: { ...obj('ns', 'cm', '8'), value: 'deserialized' } },
    { type: 'ERROR', object: { code: 410 } },
  ]);
  fake.calls[0].done(null);
  await p;
  t.ok(fake.calls[0].controller.signal.aborted, 'the request is closed when the watch settles');

  // done(err) rejects; abort rejects with the reason and closes the request.
  const p2 = watch({ resourceVersion: '8', timeoutSeconds: 400 }, () => undefined, new AbortController().signal);
  await new Promise((r) => setImmediate(r));
  fake.calls[1].done(new Error('socket hang up'));
  await t.rejects(p2, /socket hang up/);

  const c3 = new AbortController();
  const p3 = watch({ resourceVersion: '8', timeoutSeconds: 400 }, () => undefined, c3.signal);
  await new Promise((r) => setImmediate(r));
  c3.abort();
  await t.rejects(p3, { name: 'AbortError' });
  t.ok(fake.calls[2].controller.signal.aborted);

  // A throwing handler or deserializer ends the watch with its error.
  const p4 = watch(
    { resourceVersion: '8', timeoutSeconds: 400 },
    () => {
      throw new Error('handler says no');
    },
    new AbortController().signal,
  );
  await new Promise((r) => setImmediate(r));
  fake.calls[3].callback('ADDED', obj('ns', 'cm', '9'));
  await t.rejects(p4, /handler says no/);
  t.ok(fake.calls[3].controller.signal.aborted);

  // The request itself fails (e.g. 403 before any event).
  fake.failWith = Object.assign(new Error('Forbidden'), { statusCode: 403 });
  const forbidden = await watch({ resourceVersion: '8', timeoutSeconds: 400 }, () => undefined, new AbortController().signal).catch((err: unknown) => err);
  t.match(forbidden, { message: 'Forbidden', statusCode: 403 });

  // Aborted before starting: no request at all.
  fake.failWith = undefined;
  const c5 = new AbortController();
  c5.abort();
  await t.rejects(watch({ resourceVersion: '8', timeoutSeconds: 400 }, () => undefined, c5.signal), { name: 'AbortError' });
  t.equal(fake.calls.length, 4);
});
