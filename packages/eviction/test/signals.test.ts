import t from 'tap';
import { parseThresholdConfig, type EvictionThreshold } from '@kubelet-ts/core';
import type { Summary } from '@kubelet-ts/stats';
import { makeSignalObservations, SIGNAL_TO_NODE_CONDITION, SIGNAL_TO_RESOURCE, thresholdsMet } from '../src/index.js';
import {
  getReclaimableThreshold,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  sortByEvictionPriority,
  thresholdsFirstObservedAt,
  thresholdsMetGracePeriod,
  thresholdsUpdatedStats,
  type SignalObservations,
} from '../src/signals.js';

const T = '2026-01-01T00:00:10Z';
const ms = Date.parse(T);

t.test('makeSignalObservations: every signal from a summary as the stats provider reports it', async (t) => {
  const summary: Summary = {
    node: {
      nodeName: 'n',
      startTime: T,
      systemContainers: [
        { name: 'kubelet', startTime: T, memory: { time: T, availableBytes: 1, workingSetBytes: 1 } },
        { name: 'pods', startTime: T, memory: { time: T, availableBytes: 3000, workingSetBytes: 1000 } },
      ],
      memory: { time: T, availableBytes: 6000, workingSetBytes: 2000, usageBytes: 2500 },
      fs: { time: T, availableBytes: 40, capacityBytes: 100, inodesFree: 7, inodes: 10 },
      runtime: { imageFs: { time: T, availableBytes: 30, capacityBytes: 200, inodesFree: 5, inodes: 20 } },
      rlimit: { time: T, maxpid: 4194304, curproc: 300 },
    },
    pods: [],
  };
  t.same(Object.fromEntries(makeSignalObservations(summary)), {
    'memory.available': { availableBytes: 6000, capacityBytes: 8000, time: ms },
    'allocatableMemory.available': { availableBytes: 3000, capacityBytes: 4000, time: ms },
    'nodefs.available': { availableBytes: 40, capacityBytes: 100, time: ms },
    'nodefs.inodesFree': { availableBytes: 7, capacityBytes: 10, time: ms },
    'imagefs.available': { availableBytes: 30, capacityBytes: 200, time: ms },
    'imagefs.inodesFree': { availableBytes: 5, capacityBytes: 20, time: ms },
    'pid.available': { availableBytes: 4194004, capacityBytes: 4194304, time: ms },
  });
});

t.test('makeSignalObservations: missing figures give no observation (Go needs both halves); fallbacks', async (t) => {
  const summary: Summary = {
    node: {
      nodeName: 'n',
      startTime: T,
      memory: { time: T, availableBytes: 6000 },
      fs: { time: T, availableBytes: 40 },
      runtime: { imageFs: { time: T, usedBytes: 5, inodesFree: 5, inodes: 20 } },
      rlimit: { time: T, maxpid: 10 },
    },
    pods: [],
  };
  t.same([...makeSignalObservations(summary).keys()], [], 'imagefs inodes need the imagefs bytes too, as in Go');
  t.same(Object.fromEntries(makeSignalObservations(summary, { memoryBytes: 9000 })), { 'memory.available': { availableBytes: 6000, capacityBytes: 9000, time: ms } }, 'no working set: the capacity given');
  const noTime = makeSignalObservations({ node: { nodeName: 'n', startTime: T, fs: { time: '', availableBytes: 1, capacityBytes: 2 } }, pods: [] });
  t.same(noTime.get('nodefs.available'), { availableBytes: 1, capacityBytes: 2, time: 0 });
});

const th = (hard: Record<string, string>, minReclaim?: Record<string, string>): EvictionThreshold[] => parseThresholdConfig([], hard, {}, {}, minReclaim);
const obs = (entries: Record<string, [number, number, number?]>): SignalObservations =>
  new Map(Object.entries(entries).map(([k, [a, c, time]]) => [k as EvictionThreshold['signal'], { availableBytes: a, capacityBytes: c, time: time ?? ms }]));

t.test('thresholdsMet: LessThan, percentages of capacity, min reclaim only when enforced', async (t) => {
  const [mem, fs] = th({ 'memory.available': '100', 'nodefs.available': '10%' }, { 'nodefs.available': '5%' });
  t.same(thresholdsMet([mem, fs], obs({ 'memory.available': [99, 1000], 'nodefs.available': [100, 1000] }), false), [mem], 'exactly at the threshold is not met');
  t.same(thresholdsMet([mem, fs], obs({ 'memory.available': [100, 1000], 'nodefs.available': [99, 1000] }), false), [fs]);
  t.same(thresholdsMet([fs], obs({ 'nodefs.available': [140, 1000] }), true), [fs], 'below 10% + 5%');
  t.same(thresholdsMet([fs], obs({ 'nodefs.available': [150, 1000] }), true), []);
  const missing: string[] = [];
  t.same(thresholdsMet([mem], new Map(), false, (s) => missing.push(s)), []);
  t.same(missing, ['memory.available']);
  t.same(mergeThresholds([mem], [fs, mem]), [mem, fs]);
});

t.test('grace periods, first observation, fresh stats', async (t) => {
  const [hard, soft] = parseThresholdConfig([], { 'memory.available': '1Gi' }, { 'memory.available': '2Gi' }, { 'memory.available': '30s' });
  const first = thresholdsFirstObservedAt([hard, soft], new Map([[soft, 1000]]), 5000);
  t.same([...first.values()], [5000, 1000]);
  t.same(thresholdsMetGracePeriod(first, 30_999), [hard]);
  t.same(thresholdsMetGracePeriod(first, 31_000), [hard, soft]);
  const now = obs({ 'memory.available': [1, 2, 2000] });
  t.same(thresholdsUpdatedStats([hard], now, new Map()), [hard], 'no previous observation');
  t.same(thresholdsUpdatedStats([hard], now, obs({ 'memory.available': [1, 2, 2000] })), [], 'same time: stale');
  t.same(thresholdsUpdatedStats([hard], now, obs({ 'memory.available': [1, 2, 1000] })), [hard], 'newer');
  t.same(thresholdsUpdatedStats([hard], obs({ 'memory.available': [1, 2, 0] }), obs({ 'memory.available': [1, 2, 1000] })), [hard], 'unknown time: always fresh');
  t.same(thresholdsUpdatedStats([hard], new Map(), new Map()), [], 'no observation');
});

t.test('node conditions, transition period, eviction priority', async (t) => {
  const ts = parseThresholdConfig([], { 'pid.available': '10', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%', 'containerfs.available': '10%', 'memory.available': '1Gi' });
  t.same(nodeConditions(ts), ['PIDPressure', 'DiskPressure', 'MemoryPressure']);
  const last = nodeConditionsLastObservedAt(['DiskPressure'], new Map([['MemoryPressure', 100], ['DiskPressure', 50]]), 1000);
  t.same(Object.fromEntries(last), { DiskPressure: 1000, MemoryPressure: 100 });
  t.same(nodeConditionsObservedSince(last, 500, 1000), ['DiskPressure']);
  t.same(nodeConditionsObservedSince(last, 901, 1000), ['MemoryPressure', 'DiskPressure'], 'a fixed order');
  const sorted = sortByEvictionPriority(ts).map((x) => x.signal);
  t.same(sorted, ['memory.available', 'pid.available', 'nodefs.inodesFree', 'imagefs.available', 'containerfs.available']);
  t.same(getReclaimableThreshold(ts.filter((x) => x.signal === 'containerfs.available')), undefined, 'containerfs has nothing to reclaim');
  t.same(getReclaimableThreshold(ts)?.resource, 'pids');
  t.equal(SIGNAL_TO_RESOURCE['nodefs.inodesFree'], 'inodes');
  t.equal(SIGNAL_TO_NODE_CONDITION['allocatableMemory.available'], 'MemoryPressure');
});
