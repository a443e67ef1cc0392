import t from 'tap';
import { cpuAndMemoryOnly, type Summary } from '../src/index.js';
import { emptySummary, FakeSummaryProvider } from '../src/testing.js';

const time = '2026-01-01T00:00:00Z';
const summary: Summary = {
  node: { nodeName: 'n', startTime: time, cpu: { time, usageCoreNanoSeconds: 1 }, fs: { time, usedBytes: 2 }, rlimit: { time, maxpid: 3 } },
  pods: [
    {
      podRef: { name: 'p', namespace: 'ns', uid: 'u' },
      startTime: time,
      containers: [{ name: 'c', startTime: time, memory: { time, workingSetBytes: 4 }, rootfs: { time, usedBytes: 5 } }],
      memory: { time, workingSetBytes: 4 },
      'ephemeral-storage': { time, usedBytes: 5 },
    },
  ],
};

t.test('FakeSummaryProvider returns copies of its summary and records calls', async (t) => {
  const fake = new FakeSummaryProvider(summary);
  const got = await fake.get(true);
  t.same(got, summary);
  got.pods.length = 0;
  t.equal(fake.summary.pods.length, 1, 'callers get a copy');
  t.same(await fake.getCPUAndMemoryStats(), {
    node: { nodeName: 'n', startTime: time, cpu: { time, usageCoreNanoSeconds: 1 } },
    pods: [
      {
        podRef: { name: 'p', namespace: 'ns', uid: 'u' },
        startTime: time,
        containers: [{ name: 'c', startTime: time, memory: { time, workingSetBytes: 4 } }],
        memory: { time, workingSetBytes: 4 },
      },
    ],
  });
  fake.error = new Error('boom');
  await t.rejects(fake.get(false), { message: 'boom' });
  await t.rejects(fake.getCPUAndMemoryStats(), { message: 'boom' });
  t.same(fake.calls, [{ method: 'get', updateStats: true }, { method: 'getCPUAndMemoryStats' }, { method: 'get', updateStats: false }, { method: 'getCPUAndMemoryStats' }]);
});

t.test('emptySummary and cpuAndMemoryOnly', async (t) => {
  t.same(emptySummary('x', Date.parse(time)), { node: { nodeName: 'x', startTime: time }, pods: [] });
  t.same(new FakeSummaryProvider().summary.node.nodeName, 'fake-node');
  t.same(cpuAndMemoryOnly(summary), await new FakeSummaryProvider(summary).getCPUAndMemoryStats());
});
