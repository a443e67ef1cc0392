import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { isCriticalPod, isCriticalPodBasedOnPriority, SYSTEM_CRITICAL_PRIORITY } from '../src/index.js';

const pod = (annotations?: Record<string, string>, priority?: number): V1Pod => ({ metadata: { name: 'p', annotations }, spec: { containers: [], priority } });

t.test('isCriticalPod: static, mirror, or system-critical priority (Go IsCriticalPod)', async (t) => {
  t.equal(SYSTEM_CRITICAL_PRIORITY, 2_000_000_000);
  t.equal(isCriticalPod(pod()), false, 'an API pod without priority');
  t.equal(isCriticalPod(pod({ 'kubernetes.io/config.source': 'api' })), false, 'the api source is not static');
  t.equal(isCriticalPod(pod({ 'kubernetes.io/config.source': 'file' })), true, 'static pod');
  t.equal(isCriticalPod(pod({ 'kubernetes.io/config.mirror': 'hash' })), true, 'mirror pod');
  t.equal(isCriticalPod(pod(undefined, 2_000_000_000)), true, 'system-cluster-critical');
  t.equal(isCriticalPod(pod(undefined, 2_000_001_000)), true, 'system-node-critical');
  t.equal(isCriticalPod(pod(undefined, 1_999_999_999)), false);
  t.equal(isCriticalPodBasedOnPriority(0), false);
  t.equal(isCriticalPod({}), false, 'no spec, no metadata');
});
