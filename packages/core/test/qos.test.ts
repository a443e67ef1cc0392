import t from 'tap';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { CPU_MAX_SHARES, effectiveRequests, getPodQOS, milliCpuToQuota, milliCpuToShares } from '../src/index.js';

type Res = { requests?: Record<string, string>; limits?: Record<string, string> };
const c = (name: string, resources?: Res): V1Container => ({ name, image: 'img', resources });
const pod = (containers: V1Container[], initContainers?: V1Container[]): V1Pod => ({ spec: { containers, initContainers } });

t.test('getPodQOS follows Go v1qos.GetPodQOS', async (t) => {
  t.equal(getPodQOS(pod([c('a')])), 'BestEffort');
  t.equal(getPodQOS(pod([c('a', { requests: { cpu: '0', memory: '0' } })])), 'BestEffort', 'zero quantities do not count');
  t.equal(getPodQOS(pod([c('a', { requests: { 'ephemeral-storage': '1Gi' }, limits: { 'nvidia.com/gpu': '1' } })])), 'BestEffort', 'only cpu and memory count');
  const guaranteed = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } };
  t.equal(getPodQOS(pod([c('a', guaranteed), c('b', guaranteed)])), 'Guaranteed');
  t.equal(getPodQOS(pod([c('a', { limits: { cpu: '1', memory: '1Gi' } })])), 'Guaranteed', 'requests default to limits');
  t.equal(getPodQOS(pod([c('a', { requests: { cpu: '0.1', memory: '100Mi' }, limits: { cpu: '100m', memory: '104857600' } })])), 'Guaranteed', 'quantities compare by value');
  t.equal(getPodQOS(pod([c('a', guaranteed), c('b')])), 'Burstable', 'one container without limits');
  t.equal(getPodQOS(pod([c('a', { requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '1Gi' } })])), 'Burstable');
  t.equal(getPodQOS(pod([c('a', { limits: { cpu: '1' } })])), 'Burstable', 'memory limit missing');
  t.equal(getPodQOS(pod([c('a', { requests: { memory: '10Mi' } })])), 'Burstable');
  t.equal(getPodQOS(pod([c('a', guaranteed)], [c('init')])), 'Burstable', 'an init container without limits makes it burstable');
  t.equal(getPodQOS(pod([c('a', guaranteed)], [c('init', guaranteed)])), 'Guaranteed');
  t.equal(getPodQOS(pod([c('a')], [c('init', { requests: { cpu: '10m' } })])), 'Burstable', 'init container requests count');
  t.equal(getPodQOS({}), 'BestEffort', 'no spec');
});

t.test('effectiveRequests applies the API defaulting of requests from limits', async (t) => {
  t.same(effectiveRequests(c('a', { requests: { cpu: '1' }, limits: { cpu: '2', memory: '1Gi' } })), { cpu: '1', memory: '1Gi' });
  t.same(effectiveRequests(c('a')), {});
});

t.test('milliCpuToShares and milliCpuToQuota match Go', async (t) => {
  t.equal(milliCpuToShares(0), 2);
  t.equal(milliCpuToShares(1), 2);
  t.equal(milliCpuToShares(2), 2);
  t.equal(milliCpuToShares(3), 3);
  t.equal(milliCpuToShares(100), 102);
  t.equal(milliCpuToShares(1000), 1024);
  t.equal(milliCpuToShares(10_000_000), CPU_MAX_SHARES);
  t.equal(milliCpuToQuota(0, 100_000), 0);
  t.equal(milliCpuToQuota(5, 100_000), 1000, 'at least 1 ms');
  t.equal(milliCpuToQuota(10, 100_000), 1000);
  t.equal(milliCpuToQuota(200, 100_000), 20_000);
  t.equal(milliCpuToQuota(1500, 50_000), 75_000);
});
