// The README's examples, run for real.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProbeResultLookup } from '@kubelet-ts/runtime-manager';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { httpProbe, ProbeManager } from '../src/index.js';
import * as proberTesting from '../src/testing.js';

t.test('node tool: probe an HTTP endpoint with Go semantics', async (t) => {
  const server: Server = createServer((req, res) => {
    if (req.url === '/healthz') res.end('ok');
    else res.writeHead(500).end('broken');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;

  const res = await httpProbe({ url: `http://127.0.0.1:${port}/healthz`, headers: [{ name: 'X-Probe', value: '1' }], timeoutSeconds: 1 });
  t.same(res, { result: 'success', output: 'ok' });
  t.same(await httpProbe({ url: `http://127.0.0.1:${port}/other`, timeoutSeconds: 1 }), {
    result: 'failure',
    output: 'HTTP probe failed with statuscode: 500',
  });
});

t.test('kubelet wiring: the results managers are the runtime manager\'s lookups, the recorder is core\'s', async (t) => {
  const recorder = new RecordingEventRecorder();
  t.equal(proberTesting.RecordingEventRecorder, RecordingEventRecorder, './testing re-exports core\'s recorder');
  const probes = new ProbeManager({ getPodStatus: () => undefined, recorder });
  const liveness: ProbeResultLookup = probes.livenessManager.lookup;
  const startup: ProbeResultLookup = probes.startupManager.lookup;
  probes.livenessManager.set('containerd://abc', 'failure', { uid: 'u' });
  t.equal(liveness('containerd://abc'), 'failure');
  t.equal(startup('containerd://abc'), undefined);
  await probes.stop();
});
