import t from 'tap';
import { cpuSharesToWeight, milliCpuToQuota, milliCpuToShares, podRequestsAndLimits, resourceConfigForPod } from '../src/index.js';
import { bestEffortPod, burstablePod, container, guaranteedPod, makePod } from './helpers.js';

t.test('cpu conversions: shares, quota and the libcontainer v1 -> v2 weight', async (t) => {
  t.equal(milliCpuToShares(0), 2, 'no request: the kernel minimum');
  t.equal(milliCpuToShares(1), 2);
  t.equal(milliCpuToShares(250), 256);
  t.equal(milliCpuToShares(1000), 1024);
  t.equal(milliCpuToShares(300_000), 262144, 'capped at MaxShares');
  t.equal(milliCpuToQuota(0, 100_000), 0);
  t.equal(milliCpuToQuota(1, 100_000), 1000, 'at least MinQuotaPeriod');
  t.equal(milliCpuToQuota(500, 100_000), 50_000);
  t.equal(milliCpuToQuota(500, 200_000), 100_000, 'scales with the period');
  t.equal(cpuSharesToWeight(2), 1);
  t.equal(cpuSharesToWeight(1024), 39, '1 + (1022*9999)/262142');
  t.equal(cpuSharesToWeight(102), 4);
  t.equal(cpuSharesToWeight(262143), 9999);
  t.equal(cpuSharesToWeight(262144), 10000);
  t.equal(cpuSharesToWeight(1_000_000), 10000);
  t.equal(cpuSharesToWeight(0), 1, 'below the minimum counts as the minimum');
});

t.test('resourceConfigForPod: Guaranteed gets shares, quota, period and memory', async (t) => {
  t.same(resourceConfigForPod(guaranteedPod('g', '500m', '128Mi')), { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 128 * 2 ** 20 });
  t.same(resourceConfigForPod(guaranteedPod('g', '2', '1Gi'), { cpuPeriodUs: 50_000 }), {
    cpuShares: 2048,
    cpuQuota: 100_000,
    cpuPeriod: 50_000,
    memoryLimitBytes: 2 ** 30,
  });
  t.same(resourceConfigForPod(guaranteedPod('g', '500m', '128Mi'), { enforceCpuLimits: false }), {
    cpuShares: 512,
    cpuQuota: -1,
    cpuPeriod: 100_000,
    memoryLimitBytes: 128 * 2 ** 20,
  }, '--cpu-cfs-quota=false: quota -1 (unlimited)');
});

t.test('resourceConfigForPod: Burstable sets quota and memory only when every container declares them', async (t) => {
  t.same(resourceConfigForPod(burstablePod('b', '250m')), { cpuShares: 256 }, 'requests only: shares');
  const bothLimited = makePod('b', [
    container('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } }),
    container('b', { limits: { cpu: '300m', memory: '64Mi' }, requests: { cpu: '100m' } }),
  ]);
  t.same(resourceConfigForPod(bothLimited), { cpuShares: 204, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 192 * 2 ** 20 });
  const oneWithoutCpuLimit = makePod('b', [
    container('a', { requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '128Mi' } }),
    container('b', { requests: { cpu: '100m' }, limits: { memory: '64Mi' } }),
  ]);
  t.same(resourceConfigForPod(oneWithoutCpuLimit), { cpuShares: 204, memoryLimitBytes: 192 * 2 ** 20 }, 'no quota: container b has no cpu limit');
  t.same(resourceConfigForPod(bothLimited, { enforceCpuLimits: false }), { cpuShares: 204, cpuQuota: -1, cpuPeriod: 100_000, memoryLimitBytes: 192 * 2 ** 20 });
});

t.test('resourceConfigForPod: BestEffort gets the minimum shares only', async (t) => {
  t.same(resourceConfigForPod(bestEffortPod('e')), { cpuShares: 2 });
  t.same(resourceConfigForPod(bestEffortPod('e'), { enforceCpuLimits: false }), { cpuShares: 2 });
});

t.test('init containers raise requests and limits to their maximum', async (t) => {
  const pod = makePod('i', [container('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } })], {
    initContainers: [container('init', { requests: { cpu: '1', memory: '32Mi' }, limits: { cpu: '1', memory: '32Mi' } })],
  });
  const { requests, limits } = podRequestsAndLimits(pod);
  t.equal(requests.get('cpu')?.milliValue(), 1000, 'init cpu is larger');
  t.equal(requests.get('memory')?.value(), 64 * 2 ** 20, 'app memory is larger');
  t.equal(limits.get('cpu')?.milliValue(), 1000);
  // Every container requests what it limits, so the pod stays Guaranteed with the init-raised values.
  t.same(resourceConfigForPod(pod), { cpuShares: 1024, cpuQuota: 100_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * 2 ** 20 });
});

t.test('pod overhead is added to the requests and to the limits that are set', async (t) => {
  const guaranteed = makePod('o', [container('a', { limits: { cpu: '500m', memory: '100Mi' } })], { overhead: { cpu: '250m', memory: '20Mi' } });
  t.same(resourceConfigForPod(guaranteed), { cpuShares: 768, cpuQuota: 75_000, cpuPeriod: 100_000, memoryLimitBytes: 120 * 2 ** 20 });
  const burstable = makePod('o', [container('a', { requests: { cpu: '100m' } })], { overhead: { cpu: '100m', memory: '20Mi' } });
  const { limits } = podRequestsAndLimits(burstable);
  t.notOk(limits.has('memory'), 'no memory limit, none is made up from overhead');
  t.same(resourceConfigForPod(burstable), { cpuShares: 204 });
});
