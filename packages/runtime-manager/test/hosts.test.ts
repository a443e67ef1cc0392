// Pod hostname/subdomain/FQDN and the managed /etc/hosts (Go: kubelet_pods_test.go TestMakeMounts,
// TestManagedHostsFileContent, TestNodeHostsFileContent, TestGeneratePodHostNameAndDomain,
// TestGetNodenameForKernel; kuberuntime_sandbox_test.go for the sandbox hostname).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import {
  etcHostsPath,
  generatePodSandboxConfig,
  hostsEntriesFromHostAliases,
  isDns1123Label,
  managedHostsFileContent,
  nodeHostsFileContent,
  nodenameForKernel,
  podHostname,
  podHostnameAndDomain,
  shouldMountHostsFile,
  truncatePodHostnameIfNeeded,
} from '../src/index.js';
import { makePod, setup } from './helpers.js';

type CreateArgs = [string, runtimeapi.ContainerConfigInit, runtimeapi.PodSandboxConfigInit];
const createCalls = (runtime: { calls: { method: string; args: unknown[] }[] }) =>
  runtime.calls.filter((c) => c.method === 'createContainer').map((c) => c.args as CreateArgs);
const sandboxConfigs = (runtime: { calls: { method: string; args: unknown[] }[] }) =>
  runtime.calls.filter((c) => c.method === 'runPodSandbox').map((c) => c.args[0] as runtimeapi.PodSandboxConfigInit);

function pod(name: string, spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return { metadata: { name, namespace: 'ns', uid: 'uid-1' }, spec: { containers: [{ name: 'app' }], ...spec } };
}

const managedHeader = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
].join('\n') + '\n';

t.test('hostname: spec.hostname, else the pod name cut to 63 characters without a trailing - or .', async (t) => {
  t.same(podHostnameAndDomain(pod('web'), 'cluster.local'), { hostname: 'web', domain: '' });
  t.same(podHostnameAndDomain(pod('web', { hostname: 'db-0', subdomain: 'db' }), 'cluster.local'), { hostname: 'db-0', domain: 'db.ns.svc.cluster.local' });
  t.same(podHostnameAndDomain(pod('web', { subdomain: 'sub' }), ''), { hostname: 'web', domain: 'sub.ns.svc.' }, 'Go formats the domain even without a cluster domain');
  const long = `${'a'.repeat(61)}-.-b`;
  t.equal(podHostname(pod(long)), 'a'.repeat(61));
  t.equal(truncatePodHostnameIfNeeded('p', 'x'.repeat(63)), 'x'.repeat(63));
  t.throws(() => truncatePodHostnameIfNeeded('p', '-'.repeat(70)), { message: `hostname for pod "p" was invalid: "${'-'.repeat(70)}"` });
});

t.test('an invalid spec.hostname or subdomain fails with Go\'s message', async (t) => {
  const labelError = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name' or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  t.same(isDns1123Label('ok-1'), []);
  t.same(isDns1123Label('Bad_Name'), [labelError]);
  t.same(isDns1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
  t.throws(() => podHostnameAndDomain(pod('web', { hostname: 'Bad_Name' }), 'c'), { message: `pod Hostname "Bad_Name" is not a valid DNS label: ${labelError}` });
  t.throws(() => podHostnameAndDomain(pod('web', { subdomain: '-x-' }), 'c'), { message: `pod Subdomain "-x-" is not a valid DNS label: ${labelError}` });
});

t.test('setHostnameAsFQDN: the FQDN as the kernel hostname, at most 64 characters', async (t) => {
  t.equal(nodenameForKernel('web', 'sub.ns.svc.cluster.local', true), 'web.sub.ns.svc.cluster.local');
  t.equal(nodenameForKernel('web', 'sub.ns.svc.cluster.local', false), 'web');
  t.equal(nodenameForKernel('web', '', true), 'web', 'no domain: the short name');
  const host = 'h'.repeat(40);
  const domain = 'sub.ns.svc.cluster.local';
  t.throws(() => nodenameForKernel(host, domain, true), {
    message: `failed to construct FQDN from pod hostname and cluster domain, FQDN ${host}.${domain} is too long (64 characters is the max, 65 characters requested)`,
  });
  t.equal(nodenameForKernel('h'.repeat(39), domain, true).length, 64);
});

t.test('the sandbox hostname: the FQDN with setHostnameAsFQDN, empty on the host network', async (t) => {
  const opts = { podLogsRootDirectory: '/logs', clusterDomain: 'cluster.local' };
  t.equal(generatePodSandboxConfig(pod('web', { hostname: 'h', subdomain: 's', setHostnameAsFQDN: true }), 0, opts).hostname, 'h.s.ns.svc.cluster.local');
  t.equal(generatePodSandboxConfig(pod('web', { hostname: 'h', subdomain: 's' }), 0, opts).hostname, 'h');
  t.equal(generatePodSandboxConfig(pod('web', { hostNetwork: true, hostname: 'h', subdomain: 's', setHostnameAsFQDN: true }), 0, opts).hostname, '');
  t.throws(() => generatePodSandboxConfig(pod('web', { hostname: 'h'.repeat(50), subdomain: 's', setHostnameAsFQDN: true }), 0, opts), /FQDN .* is too long/);

  const { manager, runtime, backoff, recorder } = setup({ clusterDomain: 'cluster.local' });
  const fqdnPod = makePod();
  fqdnPod.spec!.subdomain = 'sub';
  fqdnPod.spec!.setHostnameAsFQDN = true;
  await manager.syncPod(fqdnPod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(sandboxConfigs(runtime)[0].hostname, 'web.sub.default.svc.cluster.local');

  const tooLong = makePod({ name: 'w'.repeat(40), uid: 'uid-2' });
  tooLong.spec!.subdomain = 'sub';
  tooLong.spec!.setHostnameAsFQDN = true;
  const result = await manager.syncPod(tooLong, await manager.getPodStatus('uid-2', tooLong.metadata!.name!, 'default'), [], backoff);
  t.equal(result.syncResults.find((r) => r.action === 'CreatePodSandbox')?.error, 'CreatePodSandboxError');
  t.match(recorder.messages('FailedCreatePodSandBox')[0], /failed to construct FQDN from pod hostname and cluster domain/);
});

t.test('managedHostsFileContent: localhost lines, the pod IPs with FQDN or short name, the aliases', async (t) => {
  t.equal(managedHostsFileContent(['10.0.0.5'], 'web', '', undefined), managedHeader + '10.0.0.5\tweb\n');
  t.equal(
    managedHostsFileContent(['10.0.0.5', 'fd00::5'], 'db-0', 'db.ns.svc.cluster.local', [
      { ip: '123.45.67.89', hostnames: ['foo', 'bar', 'baz'] },
      { ip: '456.78.90.123', hostnames: ['park', 'doo', 'boo'] },
    ]),
    managedHeader +
      '10.0.0.5\tdb-0.db.ns.svc.cluster.local\tdb-0\n' +
      'fd00::5\tdb-0.db.ns.svc.cluster.local\tdb-0\n' +
      '\n# Entries added by HostAliases.\n' +
      '123.45.67.89\tfoo\tbar\tbaz\n' +
      '456.78.90.123\tpark\tdoo\tboo\n',
  );
  t.equal(hostsEntriesFromHostAliases([]), '');
});

t.test('nodeHostsFileContent: the host-network header, the node file, the aliases', async (t) => {
  const node = '127.0.0.1\tlocalhost\n203.0.113.7\tnode-1\n';
  t.equal(nodeHostsFileContent(node, undefined).toString(), '# Kubernetes-managed hosts file (host network).\n' + node);
  t.equal(
    nodeHostsFileContent(Buffer.from(node), [{ ip: '1.2.3.4', hostnames: ['a'] }]).toString(),
    '# Kubernetes-managed hosts file (host network).\n' + node + '\n# Entries added by HostAliases.\n1.2.3.4\ta\n',
  );
});

t.test('shouldMountHostsFile: with pod IPs or the host network, unless the container mounts /etc/hosts itself', async (t) => {
  const c = { name: 'app' };
  t.equal(shouldMountHostsFile(pod('p'), c, ['10.0.0.1']), true);
  t.equal(shouldMountHostsFile(pod('p'), c, []), false, 'no IP yet');
  t.equal(shouldMountHostsFile(pod('p', { hostNetwork: true }), c, []), true);
  t.equal(shouldMountHostsFile(pod('p'), { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] }, ['10.0.0.1']), false);
  t.equal(etcHostsPath('/var/lib/kubelet/pods/u/'), '/var/lib/kubelet/pods/u/etc-hosts');
});

t.test('each container gets <root>/pods/<uid>/etc-hosts at /etc/hosts, written with the pod IP, FQDN and aliases', async (t) => {
  const { manager, runtime, backoff, fs } = setup({ kubeletRootDirectory: '/var/lib/kubelet/', clusterDomain: 'cluster.local' });
  const p = makePod({ containers: [{ name: 'a' }, { name: 'b', volumeMounts: [{ name: 'own', mountPath: '/etc/hosts' }] }] });
  p.spec!.hostname = 'db-0';
  p.spec!.subdomain = 'db';
  p.spec!.hostAliases = [{ ip: '1.2.3.4', hostnames: ['one', 'uno'] }];
  await manager.syncPod(p, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const [[, a], [, b]] = createCalls(runtime);
  const hostsPath = '/var/lib/kubelet/pods/uid-1/etc-hosts';
  t.same(a.mounts, [{ containerPath: '/etc/hosts', hostPath: hostsPath, readonly: false, selinuxRelabel: true }]);
  t.same(b.mounts, [], 'a container mounting its own /etc/hosts does not get the managed one');
  const sandboxIp = [...runtime.sandboxes.values()][0].status.network?.ip;
  t.ok(sandboxIp, 'the fake runtime gave the sandbox an IP');
  t.equal(
    fs.files.get(hostsPath)?.toString(),
    managedHeader + `${sandboxIp}\tdb-0.db.default.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n1.2.3.4\tone\tuno\n`,
  );
  t.equal(fs.modes.get(hostsPath), 0o644);
});

t.test('a host-network pod gets the node\'s /etc/hosts plus its aliases; no kubelet root, no mount', async (t) => {
  {
    const { manager, runtime, backoff, fs } = setup({ kubeletRootDirectory: '/var/lib/kubelet' });
    fs.write('/etc/hosts', '127.0.0.1\tlocalhost\n192.0.2.10\tnode-1\n');
    const p = makePod({ hostNetwork: true });
    p.spec!.hostAliases = [{ ip: '10.1.1.1', hostnames: ['svc'] }];
    await manager.syncPod(p, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    t.equal(sandboxConfigs(runtime)[0].hostname, '');
    t.same(createCalls(runtime)[0][1].mounts, [{ containerPath: '/etc/hosts', hostPath: '/var/lib/kubelet/pods/uid-1/etc-hosts', readonly: false, selinuxRelabel: true }]);
    t.equal(
      fs.files.get('/var/lib/kubelet/pods/uid-1/etc-hosts')?.toString(),
      '# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.0.2.10\tnode-1\n\n# Entries added by HostAliases.\n10.1.1.1\tsvc\n',
    );
  }
  {
    const { manager, runtime, backoff } = setup();
    await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    t.same(createCalls(runtime)[0][1].mounts, [], 'without a kubelet root directory there is nowhere to write it');
  }
});

t.test('a hosts file that cannot be written or read is CreateContainerConfigError', async (t) => {
  const { manager, runtime, backoff, recorder } = setup({ kubeletRootDirectory: '/var/lib/kubelet' });
  // MemFs has no /etc/hosts: a host-network pod cannot copy it.
  const result = await manager.syncPod(makePod({ hostNetwork: true }), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'CreateContainerConfigError');
  t.equal(start.message, 'open /etc/hosts: no such file or directory');
  t.same(recorder.messages('Failed'), ['Error: open /etc/hosts: no such file or directory']);
  t.equal(createCalls(runtime).length, 0);
});
