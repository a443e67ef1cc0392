import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { nodeReference, noopEventRecorder, type EventRecorder } from '../src/index.js';
import { RecordingEventRecorder } from '../src/testing.js';

const pod: V1Pod = { metadata: { name: 'web', namespace: 'default', uid: 'u1' } };

t.test('nodeReference is the reference Go reports node events on', async (t) => {
  t.same(nodeReference('node-1'), { kind: 'Node', name: 'node-1', uid: 'node-1', namespace: '' });
});

t.test('noopEventRecorder drops events', async (t) => {
  const recorder: EventRecorder = noopEventRecorder;
  t.equal(recorder.event(pod, 'Normal', 'Pulled', 'm'), undefined);
});

t.test('RecordingEventRecorder keeps the object as given, with details only when passed', async (t) => {
  const rec = new RecordingEventRecorder();
  const recorder: EventRecorder = rec;
  recorder.event(pod, 'Normal', 'Created', 'Created container: app', { fieldPath: 'spec.containers{app}' });
  recorder.event(nodeReference('node-1'), 'Warning', 'ImageGCFailed', 'gc failed');
  recorder.event(pod, 'Normal', 'Started', 'Started container app');
  t.equal(rec.events[0].object, pod);
  t.same(rec.events[1], { object: nodeReference('node-1'), type: 'Warning', reason: 'ImageGCFailed', message: 'gc failed' });
  t.notOk('details' in rec.events[1]);
  t.same(rec.events[0].details, { fieldPath: 'spec.containers{app}' });
  t.same(rec.reasons(), ['Created', 'ImageGCFailed', 'Started']);
  t.same(rec.messages(), ['Created container: app', 'gc failed', 'Started container app']);
  t.same(rec.messages('Started'), ['Started container app']);
  t.equal(rec.find('ImageGCFailed')?.type, 'Warning');
  t.equal(rec.find('Killing'), undefined);
  t.same(rec.lines(), ['Normal Created Created container: app', 'Warning ImageGCFailed gc failed', 'Normal Started Started container app']);
  rec.clear();
  t.same(rec.events, []);
});
