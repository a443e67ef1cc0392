import t from 'tap';
import * as core from '../src/index.js';
import * as testing from '../src/testing.js';

t.test('the public API exports what other packages are written against', async (t) => {
  const expected = [
    'RealClock',
    'realClock',
    'createLogger',
    'noopLogger',
    'Backoff',
    'containerRestartBackoff',
    'until',
    'jitterUntil',
    'jitter',
    'pollUntil',
    'RateLimitingQueue',
    'TimedWorkQueue',
    'PodOperation',
    'PodSource',
    'podFullName',
    'ConfigSourceAnnotationKey',
    'ConfigMirrorAnnotationKey',
    'ConfigFirstSeenAnnotationKey',
    'ConfigHashAnnotationKey',
    'isStaticPod',
    'isMirrorPod',
    'getPodSource',
    'parseContainerID',
    'formatContainerID',
    'findContainerStatusByName',
    'PodCache',
    'noopEventRecorder',
    'nodeReference',
  ];
  for (const name of expected) t.ok(name in core, name);
  t.notOk('FakeClock' in core, 'test doubles stay in ./testing');
  t.notOk('RecordingLogger' in core);
  t.notOk('RecordingEventRecorder' in core);
  t.type(testing.FakeClock, 'function');
  t.type(testing.RecordingLogger, 'function');
  t.type(testing.RecordingEventRecorder, 'function');
});

t.test('FakeClock and RecordingLogger satisfy the core interfaces', async (t) => {
  const clock: core.Clock = new testing.FakeClock();
  const logger: core.Logger = new testing.RecordingLogger();
  const backoff = core.containerRestartBackoff(clock);
  backoff.next('x');
  logger.info('backoff', { ms: backoff.get('x') });
  t.same((logger as testing.RecordingLogger).entries[0].kv, { ms: 10_000 });
});
