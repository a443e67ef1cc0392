import t from 'tap';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { FakeClock, RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { ActiveDeadlineHandler, DeadlineExceededMessage, DeadlineExceededReason } from '../src/lifecycle/index.js';

function makePod(activeDeadlineSeconds?: number, status?: V1PodStatus): V1Pod {
  return {
    metadata: { name: 'job-pod', namespace: 'default', uid: 'uid-1' },
    spec: { containers: [{ name: 'c', image: 'busybox' }], activeDeadlineSeconds },
    status,
  };
}

function setup() {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const recorder = new RecordingEventRecorder();
  const statuses = new Map<string, V1PodStatus>();
  const handler = new ActiveDeadlineHandler({ clock, recorder, getPodStatus: (uid) => statuses.get(uid) });
  return { clock, recorder, statuses, handler };
}

t.test('a pod past its deadline is synced and evicted with DeadlineExceeded, and the event recorded', async (t) => {
  const { clock, recorder, statuses, handler } = setup();
  const pod = makePod(30);
  statuses.set('uid-1', { phase: 'Running', startTime: new Date(clock.now()) });

  clock.step(29_999);
  t.equal(handler.shouldSync(pod), false);
  t.same(handler.shouldEvict(pod), { evict: false });
  t.same(recorder.events, [], 'no event before the deadline');

  clock.step(1);
  t.equal(handler.shouldSync(pod), true, 'at exactly the deadline');
  t.same(recorder.events, [], 'shouldSync records nothing');
  t.same(handler.shouldEvict(pod), { evict: true, reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
  t.same(recorder.lines(), [`Normal ${DeadlineExceededReason} ${DeadlineExceededMessage}`]);
  t.equal(recorder.events[0].object, pod, 'the event is about the pod');

  clock.step(60_000);
  t.equal(handler.shouldEvict(pod).evict, true);
  t.equal(recorder.events.length, 2, 'each eviction decision records an event, as Go does');
});

t.test('no deadline, or not started yet: never past the deadline', async (t) => {
  const { clock, statuses, handler } = setup();
  statuses.set('uid-1', { phase: 'Running', startTime: new Date(clock.now()) });
  clock.step(3_600_000);
  t.equal(handler.shouldSync(makePod(undefined)), false);
  t.same(handler.shouldEvict(makePod(undefined)), { evict: false });

  statuses.set('uid-1', { phase: 'Pending' });
  t.equal(handler.shouldSync(makePod(1)), false, 'the status has no startTime');
  t.same(handler.shouldEvict(makePod(1)), { evict: false });
});

t.test("the status manager's status wins; the pod's own status is the fallback", async (t) => {
  const { clock, statuses, handler } = setup();
  const start = clock.now();
  clock.step(10_000);
  // Only the pod's status (e.g. from the API server) knows the start time.
  const pod = makePod(5, { phase: 'Running', startTime: new Date(start) });
  t.equal(handler.shouldSync(pod), true, 'falls back to pod.status');

  // The status manager says it started 2 s ago: that wins.
  statuses.set('uid-1', { phase: 'Running', startTime: new Date(clock.now() - 2_000) });
  t.equal(handler.shouldSync(pod), false);
  clock.step(3_000);
  t.equal(handler.shouldSync(pod), true);

  // A start time serialized as a string (status read back from JSON) is understood.
  statuses.set('uid-1', { phase: 'Running', startTime: new Date(clock.now()).toISOString() as unknown as Date });
  t.equal(handler.shouldSync(pod), false);
  clock.step(5_000);
  t.equal(handler.shouldSync(pod), true);
});

t.test('the recorder is optional', async (t) => {
  const clock = new FakeClock();
  const startTime = new Date(clock.now());
  const handler = new ActiveDeadlineHandler({ clock, getPodStatus: () => ({ startTime }) });
  clock.step(1_000);
  t.same(handler.shouldEvict(makePod(1)), { evict: true, reason: DeadlineExceededReason, message: DeadlineExceededMessage });
});
