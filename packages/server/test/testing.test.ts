import t from 'tap';
import { noopLogger } from '@kubelet-ts/core';
import { KubeletServer } from '../src/index.js';
import { FakeServerHost, allowAllGate } from '../src/testing.js';

t.test('FakeServerHost serves pods, logs and /run through a real KubeletServer, recording the calls', async (t) => {
  const host = new FakeServerHost();
  host.pods = [{ metadata: { name: 'web', namespace: 'default', uid: 'u1' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } }];
  host.logs.set('default/web/app', 'hello\n');
  host.commandOutput = (cmd) => `ran ${cmd.join(' ')}`;
  const server = new KubeletServer({ host, gate: allowAllGate, address: '127.0.0.1', port: 0, logger: noopLogger });
  const port = await server.start();
  t.teardown(() => server.stop());
  const base = `http://127.0.0.1:${port}`;

  const pods = (await (await fetch(`${base}/pods`)).json()) as { items: { metadata: { name: string } }[] };
  t.same(pods.items.map((p) => p.metadata.name), ['web']);
  t.equal(await (await fetch(`${base}/containerLogs/default/web/app?tailLines=1`)).text(), 'hello\n');
  t.equal(await (await fetch(`${base}/run/default/web/app?cmd=echo+hi`, { method: 'POST' })).text(), 'ran echo hi');
  const missing = await fetch(`${base}/containerLogs/default/web/nope`);
  t.equal(missing.status, 404, 'a container the pod does not have is a 404');
  t.same(
    host.calls.map((c) => c.method),
    ['getContainerLogs', 'runInContainer'],
  );
  t.equal(host.calls[0].method === 'getContainerLogs' && host.calls[0].options.tailLines, 1);
});

t.test('without a streaming URL or stats the fake says so', async (t) => {
  const host = new FakeServerHost();
  const pod = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i' }] } };
  await t.rejects(host.getExec(pod, 'u', 'c', ['sh'], { stdin: false, stdout: true, stderr: true, tty: false }), /no streaming server/);
  await t.rejects(host.getStatsSummary(), /no stats summary/);
  host.streamingUrl = 'http://127.0.0.1:1/exec/x';
  t.equal(await host.getPortForward(pod, 'u', [80]), 'http://127.0.0.1:1/exec/x');
});
