// The cgroup driver from the runtime (Go 1.28+ getCgroupDriverFromCRI) and the hint for a sandbox refused because
// the two drivers disagree (containerd 1.6, which cannot say its driver).
import t from 'tap';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { cgroupDriverFromRuntime, cgroupDriverMismatchHint } from '../src/cgroup-driver.js';

function setup() {
  const clock = new FakeClock();
  const runtime = new FakeRuntimeService(clock);
  const logger = new RecordingLogger();
  return { clock, runtime, logger };
}

t.test('a runtime without RuntimeConfig (containerd 1.6) leaves the configured driver, as Go falls back', async (t) => {
  const { clock, runtime, logger } = setup();
  t.equal(await cgroupDriverFromRuntime(runtime, 'systemd', { clock, logger }), 'systemd');
  t.equal(runtime.calls.filter((c) => c.method === 'runtimeConfig').length, 1, 'asked once: Unimplemented is not retried');
  t.ok(logger.entries.some((e) => e.msg.startsWith('CRI implementation should be updated to support RuntimeConfig')));
});

t.test("the runtime's driver wins over the configuration, with a warning when they differ", async (t) => {
  const { clock, runtime, logger } = setup();
  runtime.cgroupDriver = 'SYSTEMD';
  t.equal(await cgroupDriverFromRuntime(runtime, 'cgroupfs', { clock, logger }), 'systemd');
  const warning = logger.entries.find((e) => e.level === 'warn');
  t.same(warning?.kv, { cgroupDriver: 'systemd', configuredCgroupDriver: 'cgroupfs' });
  t.ok(logger.entries.some((e) => e.msg === 'Using cgroup driver setting received from the CRI runtime' && e.kv.cgroupDriver === 'systemd'));

  runtime.cgroupDriver = 'CGROUPFS';
  const quiet = new RecordingLogger();
  t.equal(await cgroupDriverFromRuntime(runtime, 'cgroupfs', { clock, logger: quiet }), 'cgroupfs');
  t.notOk(quiet.entries.some((e) => e.level === 'warn'), 'no warning when they agree');
});

t.test('a failing runtime is asked three times, 2 s apart, then the configured driver is kept and the error logged', async (t) => {
  const { clock, runtime, logger } = setup();
  runtime.injectError('runtimeConfig', 'Unavailable', { persistent: true });
  const result = cgroupDriverFromRuntime(runtime, 'systemd', { clock, logger });
  await clock.advance(4_000);
  t.equal(await result, 'systemd');
  t.equal(runtime.calls.filter((c) => c.method === 'runtimeConfig').length, 3);
  const error = logger.entries.find((e) => e.level === 'error');
  t.match(error?.msg, 'Failed to get the cgroup driver from the container runtime; using cgroupDriver from the kubelet configuration');
  t.match(String(error?.err), /code = Unavailable/);
});

t.test('a transient failure then an answer: the answer counts', async (t) => {
  const { clock, runtime, logger } = setup();
  runtime.cgroupDriver = 'SYSTEMD';
  runtime.injectError('runtimeConfig', 'Unavailable');
  const result = cgroupDriverFromRuntime(runtime, 'cgroupfs', { clock, logger });
  await clock.advance(2_000);
  t.equal(await result, 'systemd');
});

t.test('the mismatch hint names the fix for runc refusing a cgroupfs parent under the systemd driver, and nothing else', async (t) => {
  const runc =
    'rpc error: code = Unknown desc = failed to create containerd task: failed to create shim: OCI runtime create failed: expected cgroupsPath to be of format "slice:prefix:name" for systemd cgroups, got "/kubepods/besteffort/pod1/abc" instead: unknown';
  t.match(cgroupDriverMismatchHint(runc, 'cgroupfs'), /set cgroupDriver: systemd in the kubelet configuration \(--cgroup-driver=systemd\), or SystemdCgroup = false/);
  t.equal(cgroupDriverMismatchHint(runc, 'systemd'), undefined, 'a systemd kubelet never hands runc a cgroupfs parent');
  t.equal(cgroupDriverMismatchHint('rpc error: code = Unknown desc = no space left on device', 'cgroupfs'), undefined);
});
