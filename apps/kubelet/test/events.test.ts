import t from 'tap';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import { LoggingEventRecorder } from '../src/index.js';

t.test('without an API server, events are logged as client-go logs them', async (t) => {
  const logger = new RecordingLogger();
  const recorder = new LoggingEventRecorder(logger);
  recorder.event(makeTestPod({ name: 'web' }), 'Warning', 'BackOff', 'Back-off restarting failed container app', { containerName: 'app' });
  recorder.event({ kind: 'Node', name: 'node1' }, 'Normal', 'Starting', 'Starting kubelet.');
  const [warning, normal] = logger.entries;
  t.equal(warning.msg, 'Event occurred');
  t.match(warning.kv, { object: 'default/web', kind: 'Pod', type: 'Warning', reason: 'BackOff', fieldPath: 'spec.containers{app}' });
  t.match(normal.kv, { object: 'node1', kind: 'Node', type: 'Normal', reason: 'Starting', message: 'Starting kubelet.' });
});
