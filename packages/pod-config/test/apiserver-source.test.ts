// The API server source's reflector against a scripted lister/watcher, on a FakeClock.
import t from 'tap';
import type { V1Pod, V1Status } from '@kubernetes/client-node';
import { PodOperation } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { ApiserverSource, GoneError, PodConfig, nodeFieldSelector, type PodListerWatcher, type PodWatchEvent } from '../src/index.js';
import { drainUpdates, makeTestPod, summarize } from '../src/testing.js';
import { recordingSink } from './helpers.js';

interface ActiveWatch {
  resourceVersion: string;
  timeoutSeconds: number;
  emit(e: PodWatchEvent): void;
  end(): void;
  fail(err: unknown): void;
  closed: boolean;
}

class FakeListerWatcher implements PodListerWatcher {
  pods = new Map<string, V1Pod>();
  rv = 1;
  listCalls = 0;
  listError: unknown;
  watchError: unknown;
  watches: ActiveWatch[] = [];

  async list(): Promise<{ pods: V1Pod[]; resourceVersion: string }> {
    this.listCalls++;
    if (this.listError) {
      const e = this.listError;
      this.listError = undefined;
      throw e;
    }
    return { pods: [...this.pods.values()].map((p) => structuredClone(p)), resourceVersion: String(this.rv) };
  }

  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (e: PodWatchEvent) => void, signal: AbortSignal): Promise<void> {
    if (this.watchError) {
      const e = this.watchError;
      this.watchError = undefined;
      return Promise.reject(e);
    }
    return new Promise<void>((resolve, reject) => {
      const w: ActiveWatch = {
        ...opts,
        closed: false,
        emit: (e) => {
          try {
            onEvent(e);
          } catch (err) {
            w.closed = true;
            reject(err);
          }
        },
        end: () => {
          w.closed = true;
          resolve();
        },
        fail: (err) => {
          w.closed = true;
          reject(err);
        },
      };
      signal.addEventListener('abort', () => w.fail(signal.reason), { once: true });
      this.watches.push(w);
    });
  }

  get current(): ActiveWatch {
    return this.watches[this.watches.length - 1];
  }

  /** Changes a pod and emits the event on the open watch. */
  change(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void {
    this.rv++;
    const p = structuredClone(pod);
    p.metadata!.resourceVersion = String(this.rv);
    if (type === 'DELETED') this.pods.delete(p.metadata!.name!);
    else this.pods.set(p.metadata!.name!, p);
    this.current.emit({ type, object: p });
  }

  bookmark(): void {
    this.current.emit({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } as V1Pod });
  }
}

function make(opts: { nodeHasSynced?: () => boolean } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const lw = new FakeListerWatcher();
  const rec = recordingSink();
  const source = new ApiserverSource({
    nodeName: 'node-1',
    sink: rec.sink,
    listerWatcher: lw,
    clock,
    logger,
    backoffJitter: 0,
    random: () => 0,
    nodeHasSynced: opts.nodeHasSynced,
  });
  return { clock, logger, lw, rec, source };
}

const pod = (name: string, extra: Partial<Parameters<typeof makeTestPod>[0]> = {}) => makeTestPod({ name, nodeName: 'node-1', ...extra });

t.test('lists, sends a SET, then watches from the list resourceVersion; each event sends a SET of the whole store', async (t) => {
  const { clock, lw, rec, source } = make();
  lw.pods.set('a', pod('a'));
  lw.rv = 10;
  source.start();
  await clock.flush();
  t.equal(lw.listCalls, 1);
  t.same(rec.updates.map((u) => [u.op, u.source]), [[PodOperation.SET, 'api']]);
  t.same(rec.names(), ['a']);
  t.ok(source.hasSynced());
  t.equal(lw.current.resourceVersion, '10');
  t.equal(lw.current.timeoutSeconds, 300, 'watch timeout: 5 min * (1 + rand)');
  lw.change('ADDED', pod('b'));
  await clock.flush();
  t.same(rec.names(), ['a', 'b']);
  lw.change('MODIFIED', pod('a', { status: { phase: 'Running' } }));
  await clock.flush();
  t.equal(rec.last()?.pods.find((p) => p.metadata?.name === 'a')?.status?.phase, 'Running');
  lw.change('DELETED', pod('b'));
  await clock.flush();
  t.same(rec.names(), ['a']);
  t.equal(source.lastSyncResourceVersion(), '13');
  t.same(source.pods().map((p) => p.metadata?.name), ['a']);
  await source.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('a burst of events is coalesced into one SET', async (t) => {
  const { clock, lw, rec, source } = make();
  source.start();
  await clock.flush();
  const before = rec.updates.length;
  for (let i = 0; i < 20; i++) lw.change('ADDED', pod(`p${i}`));
  await clock.flush();
  t.equal(rec.updates.length, before + 1);
  t.equal(rec.last()?.pods.length, 20);
  await source.stop();
});

t.test('a watch the server ends is resumed from the last resourceVersion, bookmarks included, without a re-list', async (t) => {
  const { clock, lw, rec, source } = make();
  lw.rv = 5;
  source.start();
  await clock.flush();
  lw.change('ADDED', pod('a')); // rv 6
  lw.rv = 42; // other objects changed elsewhere; a bookmark moves us forward
  lw.bookmark();
  await clock.flush();
  t.equal(source.stats().bookmarks, 1);
  const sets = rec.updates.length;
  lw.current.end();
  await clock.flush();
  t.equal(lw.watches.length, 2);
  t.equal(lw.current.resourceVersion, '42', 'resumed from the bookmark');
  t.equal(lw.listCalls, 1, 'no re-list');
  t.equal(rec.updates.length, sets, 'a bookmark sends nothing');
  // A broken connection: back off, then resume from the same place.
  lw.current.fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  await clock.flush();
  t.equal(lw.watches.length, 2, 'waits before retrying');
  await clock.advance(800);
  t.equal(lw.watches.length, 3);
  t.equal(lw.current.resourceVersion, '42');
  t.equal(lw.listCalls, 1);
  await source.stop();
});

t.test('410 Gone re-lists: as an ERROR event, as an HTTP status from the watch, and from a GoneError', async (t) => {
  const { clock, lw, rec, source, logger } = make();
  lw.pods.set('a', pod('a'));
  source.start();
  await clock.flush();
  // ERROR event with a Status of code 410 (what kube sends for "too old resource version").
  lw.pods.set('b', pod('b'));
  lw.rv = 100;
  lw.current.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (50)' } as V1Status });
  await clock.flush();
  t.equal(lw.listCalls, 2, 're-listed at once');
  t.same(rec.names(), ['a', 'b']);
  t.equal(lw.current.resourceVersion, '100');
  t.ok(logger.find(/410 Gone/));
  // An HTTP 410 answer to the watch request.
  lw.current.fail(Object.assign(new Error('Gone'), { statusCode: 410 }));
  await clock.flush();
  t.equal(lw.listCalls, 3);
  lw.current.fail(new GoneError());
  await clock.flush();
  t.equal(lw.listCalls, 4);
  t.equal(source.stats().gone, 3);
  await source.stop();
});

t.test('other watch ERROR events and list failures back off (800 ms doubling) and retry', async (t) => {
  const { clock, lw, source, logger } = make();
  lw.listError = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
  source.start();
  await clock.flush();
  t.equal(lw.listCalls, 1);
  t.notOk(source.hasSynced());
  t.ok(logger.find('List/watch of pods failed; retrying'));
  await clock.advance(799);
  t.equal(lw.listCalls, 1);
  await clock.advance(1);
  t.equal(lw.listCalls, 2);
  t.ok(source.hasSynced());
  lw.current.emit({ type: 'ERROR', object: { kind: 'Status', code: 500, message: 'internal error' } as V1Status });
  await clock.flush();
  t.equal(lw.watches.length, 1);
  await clock.advance(1600);
  t.equal(lw.watches.length, 2, 'second failure waits 1600 ms');
  t.equal(lw.listCalls, 2, 'no re-list for a non-410 error');
  lw.watchError = new Error('boom');
  lw.current.end();
  await clock.flush();
  t.equal(lw.watches.length, 2);
  await clock.advance(800);
  t.equal(lw.watches.length, 3, 'a watch that ended normally reset the backoff');
  t.equal(source.stats().errors, 3);
  await source.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('waits for nodeHasSynced before listing (polled every second)', async (t) => {
  let synced = false;
  const { clock, lw, source } = make({ nodeHasSynced: () => synced });
  source.start();
  await clock.advance(3000);
  t.equal(lw.listCalls, 0);
  synced = true;
  await clock.advance(1000);
  t.equal(lw.listCalls, 1);
  await source.stop();
});

t.test('stop() while waiting for the node, and while a watch is open, leaves nothing behind', async (t) => {
  const waiting = make({ nodeHasSynced: () => false });
  waiting.source.start();
  await waiting.clock.flush();
  await waiting.source.stop();
  t.equal(waiting.clock.pendingTimers(), 0);
  const { clock, lw, source } = make();
  source.start();
  source.start();
  await clock.flush();
  await source.stop();
  await source.stop();
  t.ok(lw.current.closed, 'the watch was closed');
  t.equal(clock.pendingTimers(), 0);
});

t.test('through PodConfig: adds, status reconciles, graceful deletes and removals of API pods', async (t) => {
  const clock = new FakeClock();
  const lw = new FakeListerWatcher();
  const config = new PodConfig({ clock });
  const source = new ApiserverSource({ nodeName: 'node-1', sink: config.channel('api'), listerWatcher: lw, clock, backoffJitter: 0 });
  lw.pods.set('a', pod('a'));
  source.start();
  await clock.flush();
  t.same(summarize(drainUpdates(config)), ['ADD:a']);
  lw.change('MODIFIED', pod('a', { status: { phase: 'Running' } }));
  await clock.flush();
  t.same(summarize(drainUpdates(config)), ['RECONCILE:a']);
  lw.change('MODIFIED', pod('a', { status: { phase: 'Running' }, deletionTimestamp: new Date('2026-01-01T00:00:00Z'), deletionGracePeriodSeconds: 30 }));
  await clock.flush();
  t.same(summarize(drainUpdates(config)), ['DELETE:a']);
  lw.change('DELETED', pod('a'));
  await clock.flush();
  t.same(summarize(drainUpdates(config)), ['REMOVE:a']);
  t.ok(config.sourcesReady());
  await source.stop();
});

t.test('stop() does not wait for a list that hangs', async (t) => {
  const clock = new FakeClock();
  const source = new ApiserverSource({
    nodeName: 'n',
    sink: async () => undefined,
    clock,
    listerWatcher: { list: () => new Promise(() => undefined), watch: () => Promise.resolve() },
  });
  source.start();
  await clock.flush();
  await source.stop();
  t.notOk(source.hasSynced());
  t.equal(clock.pendingTimers(), 0);
});

t.test('options', async (t) => {
  t.throws(() => new ApiserverSource({ nodeName: 'n', sink: async () => undefined }), /needs a kubeConfig or a listerWatcher/);
  t.equal(nodeFieldSelector('node-1'), 'spec.nodeName=node-1');
});
