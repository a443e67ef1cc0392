// Scenario 6 (issue 33): the kubelet in a memory cgroup limited close to its working set, under churn.
// The scenario's helpers; the scenario itself is not in the CI variant: run it with `npm run chaos -- --scenarios=kubelet-memory`.
import t from 'tap';
import { memoryCgroupOf, parseMemoryStat, workingSet } from '../src/scenarios/kubelet-memory.js';

t.test('working set: usage minus inactive file; the memory cgroup of a process', async (t) => {
  const stat = parseMemoryStat('cache 100\ntotal_inactive_file 300\ninactive_file 200\n');
  t.equal(workingSet(1000, stat), 700);
  t.equal(workingSet(100, stat), 0);
  t.match(memoryCgroupOf('self'), /^\//);
});
