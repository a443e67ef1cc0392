import t from 'tap';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { FakeClock, RecordingEventRecorder } from '@kubelet-ts/core/testing';
import {
  execProbe,
  expandCommand,
  httpGetUrl,
  MAX_PROBE_RETRIES,
  probeRequestHeaders,
  Prober,
  probeSettings,
  probeUserAgent,
} from '../src/index.js';
import { resolveContainerPort } from '@kubelet-ts/core';
import { FakeExecRunner } from '../src/testing.js';
import { makePod } from './helpers.js';

const out = (stdout: string, stderr = '', exitCode = 0) => ({ stdout: Buffer.from(stdout), stderr: Buffer.from(stderr), exitCode });

t.test('exec probe: exit codes, output cap, timeouts and runtime errors', async (t) => {
  const runner = new FakeExecRunner((_id, cmd) => {
    if (cmd[0] === 'big') return out('x'.repeat(20_000), 'y');
    if (cmd[0] === 'fail') return out('out ', 'err', 2);
    return out('fine');
  });
  t.same(await execProbe(runner, 'c1', ['ok'], 1), { result: 'success', output: 'fine' });
  t.same(await execProbe(runner, 'c1', ['fail'], 1), { result: 'failure', output: 'out err' });
  t.equal((await execProbe(runner, 'c1', ['big'], 1)).output.length, 10 * 1024, 'output capped at 10 KiB');
  t.same(runner.calls[0], { containerId: 'c1', cmd: ['ok'], timeoutSeconds: 1 });

  // A CRI runtime: a DeadlineExceeded is a timeout failure, other errors are "unknown" with Go's rpc error text.
  const fake = new FakeRuntimeService();
  const sandbox = await fake.runPodSandbox({ metadata: { name: 'p', namespace: 'default', uid: 'u', attempt: 0 } });
  const id = await fake.createContainer(sandbox, { metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' } }, {});
  fake.execResults.set(id, out('', 'nope', 1));
  t.same(await execProbe(fake, id, ['check'], 1), { result: 'failure', output: 'nope' });
  fake.injectError('execSync', 'DeadlineExceeded');
  t.same(await execProbe(fake, id, ['sleep', '5'], 1), { result: 'failure', output: 'command "sleep 5" timed out' });
  t.same(await execProbe(fake, 'gone', ['true'], 1), { result: 'unknown', output: 'rpc error: code = NotFound desc = container "gone" not found' });
});

t.test('command expansion from literal env values', async (t) => {
  const env = [{ name: 'PORT', value: '8080' }, { name: 'FROM_SECRET', valueFrom: {} }];
  t.same(expandCommand(['curl', 'localhost:$(PORT)', '$$(PORT)', '$(FROM_SECRET)', '$(MISSING)', 'a$b', '$('], env), [
    'curl',
    'localhost:8080',
    '$(PORT)',
    '$(FROM_SECRET)',
    '$(MISSING)',
    'a$b',
    '$(',
  ]);
});

t.test('ports, URLs, headers, durations and settings', async (t) => {
  const container = { name: 'c', ports: [{ name: 'http', containerPort: 8080 }] };
  t.equal(resolveContainerPort(80, container), 80);
  t.equal(resolveContainerPort('http', container), 8080);
  t.equal(resolveContainerPort('9090', container), 9090);
  t.throws(() => resolveContainerPort('web', container), { message: 'strconv.Atoi: parsing "web": invalid syntax' });
  t.throws(() => resolveContainerPort(0, container), { message: 'invalid port number: 0' });
  t.throws(() => resolveContainerPort(70000, container), { message: 'invalid port number: 70000' });

  t.equal(httpGetUrl({ port: 'http', path: '/healthz' }, container, '10.1.2.3').href, 'http://10.1.2.3:8080/healthz');
  t.equal(httpGetUrl({ port: 443, scheme: 'HTTPS', host: 'example.test', path: 'ready?x=1' }, container, '10.1.2.3').href, 'https://example.test/ready?x=1', 'a default port is implicit (WHATWG URL)');
  t.equal(httpGetUrl({ port: 80 }, container, 'fd00::1').href, 'http://[fd00::1]/');

  t.same(probeRequestHeaders(undefined, 'kube-probe/1.31'), [
    ['User-Agent', 'kube-probe/1.31'],
    ['Accept', '*/*'],
  ]);
  t.equal(probeUserAgent('v1.31.2'), 'kube-probe/1.31');
  t.equal(probeUserAgent('0.1.0'), 'kube-probe/0.1');
  t.same(probeSettings({}), { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 });
  t.same(probeSettings({ initialDelaySeconds: 5, periodSeconds: 2, timeoutSeconds: 3, successThreshold: 2, failureThreshold: 1 }), {
    initialDelaySeconds: 5,
    periodSeconds: 2,
    timeoutSeconds: 3,
    successThreshold: 2,
    failureThreshold: 1,
  });
});

t.test('Prober: events, retries of errored probes, defaults', async (t) => {
  const recorder = new RecordingEventRecorder();
  let calls = 0;
  const runner = new FakeExecRunner((_id, cmd) => {
    calls++;
    if (cmd[0] === 'crash') throw new Error('runtime exploded');
    return cmd[0] === 'false' ? out('bad', '', 1) : out('');
  });
  const prober = new Prober({ runner, recorder, clock: new FakeClock() });
  const pod = makePod([], { initContainers: [{ name: 'side', restartPolicy: 'Always' }] });
  const c = (command: string[], timeoutSeconds?: number) => ({ name: 'app', readinessProbe: { exec: { command }, timeoutSeconds } });

  t.equal(await prober.probe('readiness', pod, {}, c(['true']), 'containerd://abc'), 'success');
  t.same(runner.calls.at(-1), { containerId: 'abc', cmd: ['true'], timeoutSeconds: 1 }, 'the runtime id without its type, timeout defaulting to 1');
  t.equal(await prober.probe('readiness', pod, {}, c(['false'], 5), 'containerd://abc'), 'failure');
  t.equal(runner.calls.at(-1)?.timeoutSeconds, 5);

  calls = 0;
  t.equal(await prober.probe('readiness', pod, {}, c(['crash']), 'containerd://abc'), 'failure');
  t.equal(calls, MAX_PROBE_RETRIES, 'an errored probe is retried 3 times');

  t.equal(await prober.probe('liveness', pod, {}, { name: 'app' }, 'containerd://abc'), 'success', 'no probe of that type: success');
  t.equal(await prober.probe('startup', pod, {}, { name: 'side', startupProbe: {} }, 'containerd://abc'), 'failure', 'no handler');

  const noRunner = new Prober({ recorder });
  t.equal(await noRunner.probe('liveness', pod, {}, { name: 'app', livenessProbe: { exec: { command: ['true'] } } }, 'containerd://abc'), 'failure');

  t.same(
    recorder.events.map((e) => [e.type, e.reason, e.message, e.details?.fieldPath]),
    [
      ['Warning', 'Unhealthy', 'Readiness probe failed: bad', 'spec.containers{app}'],
      ['Warning', 'Unhealthy', 'Readiness probe errored: runtime exploded', 'spec.containers{app}'],
      ['Warning', 'Unhealthy', 'Startup probe errored: missing probe handler for default/web:side', 'spec.initContainers{side}'],
      ['Warning', 'Unhealthy', 'Liveness probe errored: no exec runner configured', 'spec.containers{app}'],
    ],
  );
});

t.test('a simulated probe answers instead of the handler, with the real probe\'s events', async (t) => {
  const recorder = new RecordingEventRecorder();
  const asked: Array<{ type: string; container: string; id: string }> = [];
  const prober = new Prober({
    recorder,
    simulate: (type, _pod, container, containerId) => {
      asked.push({ type, container: container.name, id: containerId });
      return type === 'readiness' ? { result: 'failure', output: 'simulated failure' } : { result: 'success', output: '' };
    },
  });
  // An HTTP handler on a pod IP nobody listens on: never dialled.
  const container = { name: 'app', readinessProbe: { httpGet: { port: 1 } }, livenessProbe: { tcpSocket: { port: 1 } } };
  const pod = { metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec: { containers: [container] } };
  const status = { podIP: '192.0.2.1' };
  t.equal(await prober.probe('readiness', pod, status, container, 'containerd://c1'), 'failure');
  t.equal(await prober.probe('liveness', pod, status, container, 'containerd://c1'), 'success');
  t.equal(await prober.probe('startup', pod, status, container, 'containerd://c1'), 'success', 'no startup probe: success without asking');
  t.same(asked, [
    { type: 'readiness', container: 'app', id: 'containerd://c1' },
    { type: 'liveness', container: 'app', id: 'containerd://c1' },
  ]);
  t.same(
    recorder.events.map((e) => [e.type, e.reason, e.message]),
    [['Warning', 'Unhealthy', 'Readiness probe failed: simulated failure']],
  );
});
