// Service environment variables (Go: envvars_test.go TestFromServices, kubelet_pods_test.go
// TestMakeEnvironmentVariables service cases).
import t from 'tap';
import type { V1Container, V1Pod, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { ConfigSourceAnnotationKey } from '@kubelet-ts/core';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import {
  envVarsFromServices,
  isServiceIPSet,
  makeEnvironmentVariables,
  serviceEnvVarMap,
  type ServiceSource,
} from '../src/index.js';
import { makePod, setup } from './helpers.js';

function svc(namespace: string, name: string, clusterIP: string, ports: V1ServicePort[] = [{ port: 80 }]): V1Service {
  return { metadata: { namespace, name }, spec: { clusterIP, ports } };
}

class FakeServices implements ServiceSource {
  synced = true;
  constructor(readonly services: V1Service[]) {}
  hasSynced(): boolean {
    return this.synced;
  }
  list(namespace: string): V1Service[] {
    return this.services.filter((s) => s.metadata?.namespace === namespace);
  }
}

const node = { allocatableMilliCpu: 1000, allocatableMemoryBytes: 1 << 30, memoryCapacityBytes: 1 << 30 };

t.test('envVarsFromServices: Go\'s variables and order; headless and IP-less services are skipped', async (t) => {
  const services: V1Service[] = [
    svc('ns', 'foo-bar', '1.2.3.4', [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'udp-dns', port: 8081, protocol: 'UDP' }]),
    svc('ns', 'abc-123', '5.6.7.8', [{ name: 'first', port: 8081 }, { name: 'second', port: 8083, protocol: 'SCTP' }]),
    svc('ns', 'unnamed', '9.9.9.9', [{ port: 53, protocol: 'UDP' }]),
    svc('ns', 'headless', 'None'),
    svc('ns', 'no-ip', ''),
    svc('ns', 'v6', 'fd00::1', [{ port: 443 }]),
  ];
  t.same(envVarsFromServices(services), [
    { name: 'FOO_BAR_SERVICE_HOST', value: '1.2.3.4' },
    { name: 'FOO_BAR_SERVICE_PORT', value: '8080' },
    { name: 'FOO_BAR_SERVICE_PORT_HTTP', value: '8080' },
    { name: 'FOO_BAR_SERVICE_PORT_UDP_DNS', value: '8081' },
    { name: 'FOO_BAR_PORT', value: 'tcp://1.2.3.4:8080' },
    { name: 'FOO_BAR_PORT_8080_TCP', value: 'tcp://1.2.3.4:8080' },
    { name: 'FOO_BAR_PORT_8080_TCP_PROTO', value: 'tcp' },
    { name: 'FOO_BAR_PORT_8080_TCP_PORT', value: '8080' },
    { name: 'FOO_BAR_PORT_8080_TCP_ADDR', value: '1.2.3.4' },
    { name: 'FOO_BAR_PORT_8081_UDP', value: 'udp://1.2.3.4:8081' },
    { name: 'FOO_BAR_PORT_8081_UDP_PROTO', value: 'udp' },
    { name: 'FOO_BAR_PORT_8081_UDP_PORT', value: '8081' },
    { name: 'FOO_BAR_PORT_8081_UDP_ADDR', value: '1.2.3.4' },
    { name: 'ABC_123_SERVICE_HOST', value: '5.6.7.8' },
    { name: 'ABC_123_SERVICE_PORT', value: '8081' },
    { name: 'ABC_123_SERVICE_PORT_FIRST', value: '8081' },
    { name: 'ABC_123_SERVICE_PORT_SECOND', value: '8083' },
    { name: 'ABC_123_PORT', value: 'tcp://5.6.7.8:8081' },
    { name: 'ABC_123_PORT_8081_TCP', value: 'tcp://5.6.7.8:8081' },
    { name: 'ABC_123_PORT_8081_TCP_PROTO', value: 'tcp' },
    { name: 'ABC_123_PORT_8081_TCP_PORT', value: '8081' },
    { name: 'ABC_123_PORT_8081_TCP_ADDR', value: '5.6.7.8' },
    { name: 'ABC_123_PORT_8083_SCTP', value: 'sctp://5.6.7.8:8083' },
    { name: 'ABC_123_PORT_8083_SCTP_PROTO', value: 'sctp' },
    { name: 'ABC_123_PORT_8083_SCTP_PORT', value: '8083' },
    { name: 'ABC_123_PORT_8083_SCTP_ADDR', value: '5.6.7.8' },
    { name: 'UNNAMED_SERVICE_HOST', value: '9.9.9.9' },
    { name: 'UNNAMED_SERVICE_PORT', value: '53' },
    { name: 'UNNAMED_PORT', value: 'udp://9.9.9.9:53' },
    { name: 'UNNAMED_PORT_53_UDP', value: 'udp://9.9.9.9:53' },
    { name: 'UNNAMED_PORT_53_UDP_PROTO', value: 'udp' },
    { name: 'UNNAMED_PORT_53_UDP_PORT', value: '53' },
    { name: 'UNNAMED_PORT_53_UDP_ADDR', value: '9.9.9.9' },
    { name: 'V6_SERVICE_HOST', value: 'fd00::1' },
    { name: 'V6_SERVICE_PORT', value: '443' },
    { name: 'V6_PORT', value: 'tcp://[fd00::1]:443' },
    { name: 'V6_PORT_443_TCP', value: 'tcp://[fd00::1]:443' },
    { name: 'V6_PORT_443_TCP_PROTO', value: 'tcp' },
    { name: 'V6_PORT_443_TCP_PORT', value: '443' },
    { name: 'V6_PORT_443_TCP_ADDR', value: 'fd00::1' },
  ]);
  t.equal(isServiceIPSet(svc('a', 'b', 'None')), false);
  t.equal(isServiceIPSet(svc('a', 'b', '10.0.0.1')), true);
});

t.test('serviceEnvVarMap: the master service always, the namespace\'s with enableServiceLinks', async (t) => {
  const source = new FakeServices([
    svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443 }]),
    svc('default', 'not-special', '10.96.0.2'),
    svc('team', 'web', '10.96.0.3'),
    svc('team', 'headless', 'None'),
    svc('other', 'db', '10.96.0.4'),
  ]);
  const names = (m: Map<string, string>) => [...new Set([...m.keys()].map((k) => k.split('_')[0]))];
  t.same(names(serviceEnvVarMap(source, 'team', true)), ['KUBERNETES', 'WEB']);
  t.same(names(serviceEnvVarMap(source, 'team', false)), ['KUBERNETES'], 'enableServiceLinks false: only the master service');
  t.same(names(serviceEnvVarMap(source, 'default', true)), ['KUBERNETES', 'NOT']);
  t.same(names(serviceEnvVarMap(source, 'default', false)), ['KUBERNETES']);
  t.equal(serviceEnvVarMap(source, 'team', false).get('KUBERNETES_SERVICE_PORT_HTTPS'), '443');
  t.equal(serviceEnvVarMap(undefined, 'team', true).size, 0, 'no source: no variables');

  const shadow = new FakeServices([svc('default', 'kubernetes', '10.96.0.1'), svc('team', 'kubernetes', '10.100.0.1')]);
  t.equal(serviceEnvVarMap(shadow, 'team', true).get('KUBERNETES_SERVICE_HOST'), '10.100.0.1', 'the namespace\'s own kubernetes service wins');
  t.equal(serviceEnvVarMap(shadow, 'team', false).get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
  const masterHeadless = new FakeServices([svc('default', 'kubernetes', 'None')]);
  t.equal(serviceEnvVarMap(masterHeadless, 'team', true).size, 0);
});

function envPod(container: Partial<V1Container>, spec: Partial<NonNullable<V1Pod['spec']>> = {}, annotations?: Record<string, string>): [V1Pod, V1Container] {
  const c = { name: 'app', ...container } as V1Container;
  return [{ metadata: { name: 'p', namespace: 'team', uid: 'u', annotations }, spec: { containers: [c], ...spec } }, c];
}

t.test('makeEnvironmentVariables: container env wins, $(VAR) sees service variables, the rest are appended', async (t) => {
  const source = new FakeServices([svc('default', 'kubernetes', '10.96.0.1', [{ port: 443 }]), svc('team', 'web', '10.96.0.3', [{ port: 80 }])]);
  const [p, c] = envPod({
    env: [
      { name: 'WEB_SERVICE_HOST', value: 'overridden' },
      { name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/$(KUBERNETES_SERVICE_HOST)' },
    ],
  });
  const env = await makeEnvironmentVariables(p, c, { podIP: '', podIPs: [], node, services: source });
  t.equal(env.get('WEB_SERVICE_HOST'), 'overridden');
  t.equal(env.get('URL'), 'http://overridden:80/10.96.0.1', 'expansion takes the container\'s own variable first, then the service ones');
  t.same([...env.keys()].slice(0, 2), ['WEB_SERVICE_HOST', 'URL'], 'the container\'s variables first');
  t.equal(env.get('KUBERNETES_PORT_443_TCP'), 'tcp://10.96.0.1:443');
  t.equal(env.get('WEB_PORT'), 'tcp://10.96.0.3:80');
  t.equal([...env.keys()].filter((k) => k === 'WEB_SERVICE_HOST').length, 1);

  const [noLinks, c2] = envPod({}, { enableServiceLinks: false });
  const env2 = await makeEnvironmentVariables(noLinks, c2, { podIP: '', podIPs: [], node, services: source });
  t.ok(env2.has('KUBERNETES_SERVICE_HOST'));
  t.notOk(env2.has('WEB_SERVICE_HOST'));
});

t.test('makeEnvironmentVariables: before the services synced only static pods get an environment', async (t) => {
  const source = new FakeServices([svc('default', 'kubernetes', '10.96.0.1')]);
  source.synced = false;
  const [p, c] = envPod({ env: [{ name: 'A', value: 'a' }] });
  await t.rejects(makeEnvironmentVariables(p, c, { podIP: '', podIPs: [], node, services: source }), {
    name: 'ContainerConfigError',
    message: 'services have not yet been read at least once, cannot construct envvars',
  });
  const [apiPod] = envPod({}, {}, { [ConfigSourceAnnotationKey]: 'api' });
  await t.rejects(makeEnvironmentVariables(apiPod, c, { podIP: '', podIPs: [], node, services: source }));
  const [staticPod] = envPod({}, {}, { [ConfigSourceAnnotationKey]: 'file' });
  const env = await makeEnvironmentVariables(staticPod, c, { podIP: '', podIPs: [], node, services: source });
  t.equal(env.get('A'), 'a');
  t.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1', 'what the cache holds is used');
});

t.test('the runtime manager: services in the container env; not synced is CreateContainerConfigError', async (t) => {
  const source = new FakeServices([svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443 }])]);
  {
    const { manager, runtime, backoff } = setup({ services: source });
    const pod = makePod({ containers: [{ name: 'app', env: [{ name: 'X', value: 'x' }], command: ['echo', '$(KUBERNETES_SERVICE_PORT)'] }] });
    await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const config = runtime.calls.find((c) => c.method === 'createContainer')!.args[1] as runtimeapi.ContainerConfigInit;
    t.same(config.envs?.slice(0, 4), [
      { key: 'X', value: 'x' },
      { key: 'KUBERNETES_SERVICE_HOST', value: '10.96.0.1' },
      { key: 'KUBERNETES_SERVICE_PORT', value: '443' },
      { key: 'KUBERNETES_SERVICE_PORT_HTTPS', value: '443' },
    ]);
    t.equal(config.envs?.length, 9);
    t.same(config.command, ['echo', '443'], 'commands expand service variables too');
  }
  {
    source.synced = false;
    const { manager, runtime, backoff, recorder } = setup({ services: source });
    const result = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
    t.equal(start.error, 'CreateContainerConfigError');
    t.equal(start.message, 'services have not yet been read at least once, cannot construct envvars');
    t.same(recorder.messages('Failed'), ['Error: services have not yet been read at least once, cannot construct envvars']);
    t.equal(runtime.calls.filter((c) => c.method === 'createContainer').length, 0);
  }
});

t.test('envFrom skips keys that are not valid variable names, with Go\'s InvalidEnvironmentVariableNames warning', async (t) => {
  const recorder = new RecordingEventRecorder();
  const sources = {
    getConfigMap: async () => ({ good: '1', '1bad': '2', 'a b': '3' }),
    getSecret: async () => undefined,
  };
  const [p, c] = envPod({ envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'P_', configMapRef: { name: 'cfg' } }] });
  const env = await makeEnvironmentVariables(p, c, { podIP: '', podIPs: [], node, sources, recorder });
  t.same([...env.keys()].sort(), ['P_1bad', 'P_good', 'good'], 'a prefix can make a key valid');
  t.same(
    recorder.events.map((e) => [e.type, e.reason, e.message]),
    [
      ['Warning', 'InvalidEnvironmentVariableNames', 'Keys [1bad, a b] from the EnvFrom configMap team/cfg were skipped since they are considered invalid environment variable names.'],
      ['Warning', 'InvalidEnvironmentVariableNames', 'Keys [P_a b] from the EnvFrom configMap team/cfg were skipped since they are considered invalid environment variable names.'],
    ],
  );
});
