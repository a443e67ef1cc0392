// Scenario 5 (issue 33): the kubelet's wall clock jumps +10 min, back, -10 min, back (libfaketime) under churn.
// The scenario's helpers; the scenario itself is not in the CI variant (a few minutes of holds and the backoff wait): run it with `npm run chaos -- --scenarios=clock-jump`.
import t from 'tap';
import { restartGaps } from '../src/scenarios/clock-jump.js';

t.test('restartGaps: the gaps within each phase, none across phases', async (t) => {
  t.same(restartGaps([{ restarts: [0, 10_000, 30_000] }, { restarts: [31_000] }, { restarts: [] }]), [10_000, 20_000]);
});
