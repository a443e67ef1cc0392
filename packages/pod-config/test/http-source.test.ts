// The HTTP source against a real local HTTP server; its poll period and timeout run on a FakeClock.
import t from 'tap';
import type { TeardownHost } from './helpers.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigSourceAnnotationKey, PodOperation } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { stringify } from 'yaml';
import { HttpSource, HttpStatusError, PodConfig, parseManifestUrlHeader } from '../src/index.js';
import { drainUpdates, makeTestManifest, summarize } from '../src/testing.js';
import { captureStderr, recordingSink, waitFor } from './helpers.js';

interface Reply {
  status?: number;
  body?: string;
  /** Never answer (to exercise the timeout). */
  hang?: boolean;
}

async function startServer(t: TeardownHost): Promise<{ url: string; reply: Reply; requests: IncomingMessage[]; server: Server }> {
  const state = { reply: { status: 200, body: '' } as Reply, requests: [] as IncomingMessage[] };
  const hung: ServerResponse[] = [];
  const server = createServer((req, res) => {
    state.requests.push(req);
    const r = state.reply;
    if (r.hang) {
      hung.push(res);
      return;
    }
    res.writeHead(r.status ?? 200, { 'content-type': 'application/json' });
    res.end(r.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const res of hung) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/pods`,
    get reply() {
      return state.reply;
    },
    set reply(r: Reply) {
      state.reply = r;
    },
    requests: state.requests,
    server,
  } as { url: string; reply: Reply; requests: IncomingMessage[]; server: Server };
}

const podJson = (name: string, image = 'busybox:1.36') => makeTestManifest(name, { image });

function make(url: string, opts: { header?: string | Record<string, string[]>; timeoutMs?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const rec = recordingSink();
  const source = new HttpSource({ url, header: opts.header, nodeName: 'node-1', sink: rec.sink, clock, logger, timeoutMs: opts.timeoutMs });
  return { clock, logger, rec, source };
}

/** Moves the poll timer and waits for the poll it starts to finish. */
async function nextPoll(clock: FakeClock, source: HttpSource, ms = 20_000): Promise<void> {
  const before = source.stats().polls;
  await clock.advance(ms);
  await waitFor(() => source.stats().polls > before, 5000, 'a poll');
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'the poll to end');
}

t.test('polls a single pod, a PodList, a List and a YAML array; sends a SET when the body changes', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: JSON.stringify(podJson('a')) };
  const { source, rec, clock } = make(srv.url, { header: 'X-Token:secret' });
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1, 5000);
  t.equal(rec.last()?.op, PodOperation.SET);
  t.equal(rec.last()?.source, 'http');
  t.same(rec.names(), ['a-node-1']);
  t.equal(rec.last()?.pods[0].metadata?.annotations?.[ConfigSourceAnnotationKey], 'http');
  t.equal(srv.requests[0].headers['x-token'], 'secret', 'the manifest URL header is sent');
  t.equal(srv.requests[0].method, 'GET');

  await nextPoll(clock, source);
  t.equal(rec.updates.length, 1, 'same body: no SET (Go short-circuits)');

  srv.reply = { body: JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [podJson('a'), podJson('b')] }) };
  await nextPoll(clock, source);
  t.same(rec.names(), ['a-node-1', 'b-node-1']);
  srv.reply = { body: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [podJson('c')] }) };
  await nextPoll(clock, source);
  t.same(rec.names(), ['c-node-1']);
  srv.reply = { body: stringify([podJson('d'), podJson('e')]) };
  await nextPoll(clock, source);
  t.same(rec.names(), ['d-node-1', 'e-node-1']);
  t.same(
    source.pods().map((p) => p.metadata?.name),
    ['d-node-1', 'e-node-1'],
  );
  t.equal(source.stats().polls, 5);
});

t.test('a non-2xx status, a garbage body and a timeout are logged with the URL and status, keeping the last good state', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: JSON.stringify(podJson('a')) };
  const { source, rec, clock, logger } = make(srv.url, { timeoutMs: 10_000 });
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1, 5000);

  srv.reply = { status: 500, body: 'boom' };
  await nextPoll(clock, source);
  const e1 = logger.find('Failed to read pods from URL');
  t.match(e1?.kv, { url: srv.url, status: 500, err: `${srv.url}: 500 Internal Server Error` });
  t.equal(rec.updates.length, 1, 'no update');

  srv.reply = { status: 200, body: '<html>not a pod</html>' };
  await nextPoll(clock, source);
  const garbage = logger.entries[logger.entries.length - 1];
  t.match(garbage, { level: 'error', msg: "Can't process manifest URL body; keeping the last good state", kv: { url: srv.url } }, 'bad input is an error, not a warning');
  t.match((garbage.err as Error).message, new RegExp(`^${srv.url}: couldn't parse as single pod or list of pods`));
  t.equal(rec.updates.length, 1);
  t.match(source.stats(), { failures: 2, invalidManifests: 1 });
  const errorsSoFar = logger.entries.filter((e) => e.level === 'error').length;
  await nextPoll(clock, source);
  t.equal(logger.entries.filter((e) => e.level === 'error').length, errorsSoFar, 'the same bad body again is not reported again');
  t.match(logger.entries[logger.entries.length - 1], { level: 'info', v: 4, msg: "Can't process manifest URL body (unchanged)" });
  t.match(source.stats(), { failures: 3, invalidManifests: 1 });

  srv.reply = { hang: true };
  const polls = source.stats().polls;
  await clock.advance(20_000);
  await waitFor(() => source.stats().polls > polls && srv.requests.length >= 4, 5000, 'the hanging request');
  await clock.advance(10_000); // the request timeout
  await waitFor(() => /timed out after 10000ms/.test(String(logger.entries[logger.entries.length - 1].kv.err)), 5000, 'timeout logged');
  t.equal(logger.entries[logger.entries.length - 1].level, 'warn');
  t.equal(rec.updates.length, 1);
  t.same(
    source.pods().map((p) => p.metadata?.name),
    ['a-node-1'],
    'last good state kept',
  );
  t.equal(source.stats().failures, 4);
  srv.reply = { status: 404 };
  await waitFor(() => clock.pendingTimers() > 0, 5000);
  await nextPoll(clock, source);
  t.match(logger.entries[logger.entries.length - 1], { level: 'warn', msg: 'Failed to read pods from URL', kv: { status: 404 } }, 'the third failure to get a body');
  await nextPoll(clock, source);
  t.match(logger.entries[logger.entries.length - 1], { level: 'warn', msg: /Dropping verbosity of this message to V\(4\)/, kv: { status: 404 } }, 'the fourth failure in a row says it goes quiet, as Go');
  await nextPoll(clock, source);
  t.match(logger.entries[logger.entries.length - 1], { level: 'info', v: 4, msg: 'Failed to read pods from URL' });

  srv.reply = { status: 200, body: JSON.stringify(podJson('a', 'busybox:2')) };
  await waitFor(() => clock.pendingTimers() > 0, 5000);
  await nextPoll(clock, source);
  t.equal(rec.updates.length, 2);
  t.ok(logger.find('Successfully read pods from URL'));
});

t.test('an invalid pod in a list is reported and skipped (its last good version kept); the others apply', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [podJson('a'), podJson('b')] }) };
  const config = new PodConfig();
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const source = new HttpSource({ url: srv.url, nodeName: 'node-1', sink: config.channel('http'), clock, logger });
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => config.stats().emitted === 1, 5000);
  t.same(summarize(drainUpdates(config)), ['ADD:a-node-1,b-node-1']);
  const badB = { ...podJson('b'), spec: { containers: [{ name: 'x', image: 'i' }, { name: 'x', image: 'i' }] } };
  srv.reply = { body: JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [podJson('a', 'busybox:2'), badB, { metadata: {}, spec: {} }, podJson('c')] }) };
  const polls = source.stats().polls;
  await clock.advance(20_000);
  await waitFor(() => source.stats().polls > polls && config.stats().emitted > 1, 5000);
  t.same(summarize(drainUpdates(config)), ['REMOVE:a-node-1', 'ADD:a-node-1,c-node-1'], 'a changed (new UID), c added, b untouched');
  t.same(
    config
      .pods()
      .map((p) => p.metadata?.name)
      .sort(),
    ['a-node-1', 'b-node-1', 'c-node-1'],
  );
  const errs = logger.entries.filter((e) => e.level === 'error');
  t.equal(errs.length, 2);
  t.equal(errs[0].msg, 'Invalid pod in manifest URL body; keeping its last good version');
  t.match((errs[0].err as Error).message, /item 1: invalid pod: spec\.containers\[1\]\.name: Duplicate value: "x"/);
  t.equal(errs[0].kv.url, srv.url);
  t.match((errs[1].err as Error).message, /item 2: invalid pod: metadata\.name: Required value/);
  t.equal(errs[1].msg, 'Invalid pod in manifest URL body; skipping it');
  t.match(source.stats(), { invalidPods: 2, invalidManifests: 0, failures: 0 }, 'the body was applied: its two invalid pods are counted');
  const polls2 = source.stats().polls;
  await clock.advance(20_000);
  await waitFor(() => source.stats().polls > polls2, 5000);
  await waitFor(() => clock.pendingTimers() > 0, 5000);
  t.equal(source.stats().invalidPods, 2, 'the same body again is not counted again');
});

t.test('a body whose only pod is invalid keeps the last good state', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: JSON.stringify(podJson('a')) };
  const { source, rec, clock, logger } = make(srv.url);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1, 5000);
  srv.reply = { body: JSON.stringify({ ...podJson('a'), spec: { restartPolicy: 'Sometimes', containers: [{ name: 'c', image: 'i' }] } }) };
  await nextPoll(clock, source);
  t.equal(rec.updates.length, 1);
  const e = logger.find("Can't process manifest URL body; keeping the last good state");
  t.equal(e?.level, 'error');
  t.match((e?.err as Error).message, /spec\.restartPolicy: Unsupported value: "Sometimes"/);
  t.match(source.stats(), { invalidManifests: 1, failures: 1 });
  srv.reply = { body: JSON.stringify(podJson('a', 'busybox:2')) };
  await nextPoll(clock, source);
  t.equal(rec.updates.length, 2);
  t.ok(logger.find('Successfully read pods from URL'), 'the recovery is logged');
});

t.test('with no logger given, a garbage body is one error line on stderr in klog format naming the URL, and counted', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: 'kind: Deployment\n' };
  const clock = new FakeClock();
  const rec = recordingSink();
  const stderr = captureStderr(t);
  const source = new HttpSource({ url: srv.url, nodeName: 'node-1', sink: rec.sink, clock });
  source.start();
  await waitFor(() => source.stats().failures === 1, 5000, 'the first poll');
  await nextPoll(clock, source);
  await source.stop();
  stderr.restore();
  const lines = stderr.lines();
  t.equal(lines.length, 1, lines.join('\n'));
  t.match(lines[0], /^E\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+\] "Can't process manifest URL body; keeping the last good state" err="/);
  t.ok(lines[0].includes(`err="${srv.url}: couldn't parse as single pod or list of pods (kind \\"Deployment\\"`), lines[0]);
  t.ok(lines[0].endsWith(` source="http" url="${srv.url}"`));
  t.match(source.stats(), { polls: 2, failures: 2, invalidManifests: 1, sets: 0 });
});

t.test('an empty 200 body is an empty SET (Go marks the source seen that way) and is logged', async (t) => {
  const srv = await startServer(t);
  srv.reply = { body: '' };
  const { source, rec, logger } = make(srv.url);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1 && logger.find('Failed to read pods from URL') !== undefined, 5000);
  t.same(rec.names(), []);
  t.match(logger.find('Failed to read pods from URL')?.kv.err, /zero-length data received from/);
});

t.test('a connection error is logged and retried on the next period', async (t) => {
  const srv = await startServer(t);
  const url = srv.url;
  srv.server.closeAllConnections();
  await new Promise<void>((resolve) => srv.server.close(() => resolve()));
  const { source, rec, logger, clock } = make(url);
  source.start();
  await waitFor(() => logger.find('Failed to read pods from URL') !== undefined, 5000);
  t.equal(logger.find('Failed to read pods from URL')?.kv.url, url);
  await nextPoll(clock, source);
  t.equal(source.stats().failures, 2, 'retried on the next period');
  t.equal(rec.updates.length, 0);
  await source.stop();
  t.equal(clock.pendingTimers(), 0, 'no timers left');
});

t.test('stop() aborts a request in flight and leaves no timers', async (t) => {
  const srv = await startServer(t);
  srv.reply = { hang: true };
  const { source, clock } = make(srv.url);
  source.start();
  await waitFor(() => srv.requests.length === 1, 5000);
  await source.stop();
  await source.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('manifest URL header validation', async (t) => {
  t.same(parseManifestUrlHeader(undefined), {});
  t.same(parseManifestUrlHeader(''), {});
  t.same(parseManifestUrlHeader('Authorization: Bearer x'), { Authorization: ['Bearer x'] });
  t.throws(() => parseManifestUrlHeader('a:b:c'), { message: `manifest-url-header must have a single ':' key-value separator, got "a:b:c"` });
  t.throws(() => parseManifestUrlHeader('novalue'), /single ':' key-value separator/);
  t.throws(() => parseManifestUrlHeader('bad name:x'), /invalid header name "bad name"/);
  t.throws(() => parseManifestUrlHeader({ a: 'x\r\ny' }), /invalid value/);
  t.same(parseManifestUrlHeader({ a: 'x', b: ['1', '2'] }), { a: ['x'], b: ['1', '2'] });
  t.throws(() => new HttpSource({ url: 'not a url', nodeName: 'n', sink: async () => undefined }));
  t.throws(() => new HttpSource({ url: 'http://x/', header: 'a:b:c', nodeName: 'n', sink: async () => undefined }), /single ':'/);
  t.equal(new HttpStatusError('http://x', 404).message, 'http://x: 404 Not Found');
});
