// The DNS configurer against Go's dns_test.go cases: policies, dnsConfig merging, resolv.conf parsing,
// the limits and their events, and the sandbox config the runtime manager sends.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { V1Pod, V1PodDNSConfig } from '@kubernetes/client-node';
import { nodeReference } from '@kubelet-ts/core';
import { RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { DnsConfigurer, mergeDnsOptions, parseResolvConf, type DnsConfigurerOptions } from '../src/index.js';
import { makePod, setup } from './helpers.js';

const RESOLV = '/etc/resolv.conf';
const HOST_RESOLV = 'nameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch corp.example. lab.example\noptions timeout:2 attempts:3\n';

function pod(spec: { dnsPolicy?: string; hostNetwork?: boolean; dnsConfig?: V1PodDNSConfig; namespace?: string } = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: spec.namespace ?? 'team', uid: 'uid-1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }], dnsPolicy: spec.dnsPolicy, hostNetwork: spec.hostNetwork, dnsConfig: spec.dnsConfig },
  };
}

function configurer(opts: Partial<DnsConfigurerOptions> & { files?: Record<string, string> } = {}) {
  const recorder = new RecordingEventRecorder();
  const logger = new RecordingLogger();
  const files = opts.files ?? { [RESOLV]: HOST_RESOLV };
  const reads: string[] = [];
  const dns = new DnsConfigurer({
    clusterDNS: ['10.96.0.10'],
    clusterDomain: 'cluster.local',
    resolvConf: RESOLV,
    nodeRef: nodeReference('node-1'),
    recorder,
    logger,
    readFile: (path) => {
      reads.push(path);
      const text = files[path];
      if (text === undefined) throw Object.assign(new Error(`open ${path}: no such file or directory`), { code: 'ENOENT' });
      return text;
    },
    ...opts,
  });
  return { dns, recorder, logger, reads };
}

t.test('parseResolvConf: nameservers accumulate, the last search and options lines win, comments and blanks are skipped', async (t) => {
  const parsed = parseResolvConf('# comment\nnameserver 1.1.1.1\n\n  search a.example b.example.\nnameserver 8.8.8.8 9.9.9.9\nsearch c.example. d\noptions ndots:1\noptions rotate edns0\n');
  t.same(parsed, { nameservers: ['1.1.1.1', '8.8.8.8'], searches: ['c.example', 'd'], options: ['rotate', 'edns0'] });
  t.same(parseResolvConf(''), { nameservers: [], searches: [], options: [] });
  t.same(parseResolvConf('search .\n').searches, [''], 'a lone dot is trimmed as Go trims it');
  t.throws(() => parseResolvConf('nameserver\nnameserver 1.1.1.1\nnameserver\n'), { message: 'nameserver list is empty ' });
});

t.test('mergeDnsOptions: pod options override by name, a value-less option drops the value', async (t) => {
  t.same(mergeDnsOptions(['ndots:5', 'timeout:2', 'rotate'], [{ name: 'ndots', value: '2' }, { name: 'timeout' }, { name: 'edns0' }]), ['ndots:2', 'timeout', 'rotate', 'edns0']);
});

t.test('ClusterFirst: the cluster DNS, the cluster search path then the node\'s, ndots:5', async (t) => {
  const { dns, recorder } = configurer();
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'ClusterFirst' })), {
    servers: ['10.96.0.10'],
    searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
    options: ['ndots:5'],
  });
  t.same(dns.getPodDNS(pod()), dns.getPodDNS(pod({ dnsPolicy: 'ClusterFirst' })), 'an empty policy is ClusterFirst');
  t.same(recorder.events, []);
});

t.test('ClusterFirst without a cluster domain keeps the node searches; duplicates of the cluster path are dropped', async (t) => {
  t.same(configurer({ clusterDomain: '' }).dns.getPodDNS(pod()).searches, ['corp.example', 'lab.example']);
  const { dns } = configurer({ files: { [RESOLV]: 'nameserver 1.1.1.1\nsearch cluster.local svc.cluster.local other\n' } });
  t.same(dns.getPodDNS(pod()).searches, ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'other']);
});

t.test('Default, and ClusterFirst on the host network: the node\'s resolv.conf as is', async (t) => {
  const { dns } = configurer();
  const host = { servers: ['10.0.0.2', '10.0.0.3'], searches: ['corp.example', 'lab.example'], options: ['timeout:2', 'attempts:3'] };
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'Default' })), host);
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'ClusterFirst', hostNetwork: true })), host);
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true })).servers, ['10.96.0.10'], 'ClusterFirstWithHostNet uses the cluster DNS');
});

t.test('None: only spec.dnsConfig', async (t) => {
  const { dns } = configurer();
  t.same(
    dns.getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.2.3.4'], searches: ['my.dns.search.suffix'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } })),
    { servers: ['1.2.3.4'], searches: ['my.dns.search.suffix'], options: ['ndots:2', 'edns0'] },
  );
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: {} })), { servers: [], searches: [], options: [] });
});

t.test('spec.dnsConfig is appended to ClusterFirst without duplicates; its options override', async (t) => {
  const { dns } = configurer();
  const config = dns.getPodDNS(pod({
    dnsConfig: { nameservers: ['10.96.0.10', '1.2.3.4'], searches: ['cluster.local', 'extra.example'], options: [{ name: 'ndots', value: '3' }, { name: 'single-request' }] },
  }));
  t.same(config, {
    servers: ['10.96.0.10', '1.2.3.4'],
    searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example', 'extra.example'],
    options: ['ndots:3', 'single-request'],
  });
});

t.test('ClusterFirst without cluster DNS falls back to Default with MissingClusterDNS on the node and the pod', async (t) => {
  const { dns, recorder } = configurer({ clusterDNS: [] });
  t.same(dns.getPodDNS(pod()).servers, ['10.0.0.2', '10.0.0.3']);
  const msg = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
  t.same(recorder.events.map((e) => [e.type, e.reason, e.message, (e.object as { kind?: string }).kind ?? 'Pod']), [
    ['Warning', 'MissingClusterDNS', msg, 'Node'],
    ['Warning', 'MissingClusterDNS', `pod: "web_team(uid-1)". ${msg}`, 'Pod'],
  ]);
  recorder.events.length = 0;
  dns.getPodDNS(pod({ dnsPolicy: 'Default' }));
  t.same(recorder.events, [], 'no event for Default itself');
});

t.test('no resolv.conf: Default pods get a node-local resolver per node IP family and search "."', async (t) => {
  const reads: string[] = [];
  const base = { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: '', readFile: (p: string) => (reads.push(p), '') };
  t.same(new DnsConfigurer(base).getPodDNS(pod({ dnsPolicy: 'Default' })), { servers: ['127.0.0.1'], searches: ['.'], options: [] });
  t.same(new DnsConfigurer({ ...base, nodeIPs: ['192.168.1.5', 'fd00::5'] }).getPodDNS(pod({ dnsPolicy: 'Default' })).servers, ['127.0.0.1', '::1']);
  t.same(new DnsConfigurer({ ...base, clusterDNS: ['10.96.0.10'] }).getPodDNS(pod()), {
    servers: ['10.96.0.10'],
    searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
    options: ['ndots:5'],
  });
  t.same(reads, [], 'nothing read');
});

t.test('clusterDNS entries that are not IPs are dropped; IPs print canonically', async (t) => {
  const { dns, logger } = configurer({ clusterDNS: ['10.96.0.10', 'dns.example', 'FD00:0:0::A', '010.0.0.1'] });
  t.same(dns.clusterDNS, ['10.96.0.10', 'fd00::a', '10.0.0.1']);
  t.ok(logger.entries.some((e) => e.msg === 'Invalid clusterDNS IP' && e.kv?.['IP'] === 'dns.example'));
});

t.test('the nameserver limit: 3, with DNSConfigForming', async (t) => {
  const { dns, recorder } = configurer();
  const config = dns.getPodDNS(pod({ dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3'] } }));
  t.same(config.servers, ['10.96.0.10', '1.1.1.1', '2.2.2.2']);
  t.same(recorder.events.map((e) => [e.type, e.reason, e.message]), [
    ['Warning', 'DNSConfigForming', 'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 2.2.2.2'],
  ]);
  t.equal((recorder.events[0].object as V1Pod).metadata?.name, 'web', 'on the pod');
});

t.test('the search limits: 32 paths, none over 253 characters, 2048 characters in all', async (t) => {
  {
    const { dns, recorder } = configurer({ clusterDomain: '', files: { [RESOLV]: '' } });
    const searches = Array.from({ length: 40 }, (_, i) => `s${i}.example`);
    const config = dns.getPodDNS(pod({ dnsConfig: { searches } }));
    t.same(config.searches, searches.slice(0, 32));
    t.same(recorder.messages('DNSConfigForming'), [
      `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.slice(0, 32).join(' ')}`,
    ]);
  }
  {
    const { dns, recorder } = configurer({ clusterDomain: '', files: { [RESOLV]: '' } });
    const long = 'a'.repeat(254);
    const config = dns.getPodDNS(pod({ dnsConfig: { searches: ['ok.example', long, 'b'.repeat(253)] } }));
    t.same(config.searches, ['ok.example', 'b'.repeat(253)], 'the 254-character path is dropped, a 253-character one stays');
    t.equal(recorder.messages('DNSConfigForming').length, 1);
  }
  {
    const { dns, recorder } = configurer({ clusterDomain: '', files: { [RESOLV]: '' } });
    // 10 paths of 250 characters: 2509 characters joined; cutting from the end until it fits 2048.
    const searches = Array.from({ length: 10 }, (_, i) => `${String(i)}${'x'.repeat(249)}`);
    const config = dns.getPodDNS(pod({ dnsConfig: { searches } }));
    t.same(config.searches, searches.slice(0, 8), '8 * 250 + 7 = 2007 <= 2048; 9 would be 2258');
    t.match(recorder.messages('DNSConfigForming')[0], /^Search Line limits were exceeded, some search paths have been omitted, the applied search line is: 0x+ /);
  }
  {
    const { dns, recorder } = configurer();
    dns.getPodDNS(pod({ dnsConfig: { searches: Array.from({ length: 27 }, (_, i) => `s${i}`) } }));
    t.same(recorder.events, [], '3 cluster + 2 node + 27 = 32 paths: within the limit');
  }
});

t.test('an unreadable or broken resolv.conf fails GetPodDNS, whatever the policy', async (t) => {
  const missing = configurer({ files: {} }).dns;
  t.throws(() => missing.getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: {} })), { message: 'open /etc/resolv.conf: no such file or directory' });
  const broken = configurer({ files: { [RESOLV]: 'nameserver\n' } }).dns;
  t.throws(() => broken.getPodDNS(pod()), { message: 'nameserver list is empty ' });
});

t.test('an unknown dnsPolicy is logged and treated as ClusterFirst', async (t) => {
  const { dns, logger } = configurer();
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'Bogus' })).servers, ['10.96.0.10']);
  const entry = logger.entries.find((e) => e.msg === 'Failed to get DNS type for pod. Falling back to DNSClusterFirst policy.');
  t.match(String((entry?.err as Error)?.message), 'invalid DNSPolicy=Bogus');
});

t.test('the default reader reads the file from disk and refuses one of 10 MiB or more', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'dns-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'resolv.conf');
  await writeFile(path, 'nameserver 9.9.9.9\nsearch home.arpa\n');
  const dns = new DnsConfigurer({ clusterDNS: [], clusterDomain: '', resolvConf: path });
  t.same(dns.getPodDNS(pod({ dnsPolicy: 'Default' })), { servers: ['9.9.9.9'], searches: ['home.arpa'], options: [] });
  await writeFile(path, Buffer.alloc(10 * 1024 * 1024, 0x0a));
  t.throws(() => dns.getPodDNS(pod({ dnsPolicy: 'Default' })), { message: 'the read limit is reached' });
  const missing = new DnsConfigurer({ clusterDNS: [], clusterDomain: '', resolvConf: join(dir, 'nope') });
  t.throws(() => missing.getPodDNS(pod()), { message: `open ${join(dir, 'nope')}: no such file or directory` });
});

t.test('checkLimitsForResolvConf warns on the node about a search line pods could not use', async (t) => {
  const check = (text: string | undefined, clusterDomain = 'cluster.local') => {
    const { dns, recorder } = configurer({ clusterDomain, files: text === undefined ? {} : { [RESOLV]: text } });
    dns.checkLimitsForResolvConf();
    t.ok(recorder.events.every((e) => (e.object as { kind?: string }).kind === 'Node' && e.reason === 'CheckLimitsForResolvConf'));
    return recorder.messages();
  };
  t.same(check(HOST_RESOLV), []);
  t.same(check(undefined), ['open /etc/resolv.conf: no such file or directory']);
  t.same(check('nameserver\n'), ['nameserver list is empty ']);
  const paths = (n: number) => `search ${Array.from({ length: n }, (_, i) => `d${i}`).join(' ')}\n`;
  t.same(check(paths(29)), []);
  t.same(check(paths(30)), ["Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!"]);
  t.same(check(paths(32), ''), []);
  t.same(check(`search ${'a'.repeat(254)}\n`), ['Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!']);
  t.same(check(`search ${Array.from({ length: 9 }, () => 'a'.repeat(250)).join(' ')}\n`), ["Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!"]);
});

t.test('the runtime manager sends DnsConfigurer.getPodDNS in the sandbox config; a failure fails the sandbox', async (t) => {
  {
    const { dns } = configurer();
    const { manager, runtime, backoff } = setup({ dnsConfigFor: (p) => dns.getPodDNS(p), clusterDomain: dns.clusterDomain });
    const p = makePod({ namespace: 'team' });
    await manager.syncPod(p, await manager.getPodStatus('uid-1', 'web', 'team'), [], backoff);
    const config = runtime.calls.find((c) => c.method === 'runPodSandbox')!.args[0] as runtimeapi.PodSandboxConfigInit;
    t.same(config.dnsConfig, {
      servers: ['10.96.0.10'],
      searches: ['team.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
      options: ['ndots:5'],
    });
  }
  {
    const { dns } = configurer({ files: {} });
    const { manager, runtime, backoff, recorder } = setup({ dnsConfigFor: (p) => dns.getPodDNS(p) });
    const result = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const create = result.syncResults.find((r) => r.action === 'CreatePodSandbox')!;
    t.equal(create.error, 'CreatePodSandboxError');
    t.match(create.message, 'open /etc/resolv.conf: no such file or directory');
    t.equal(runtime.sandboxes.size, 0, 'no sandbox created');
    t.same(recorder.messages('FailedCreatePodSandBox'), ['Failed to create pod sandbox: open /etc/resolv.conf: no such file or directory']);
  }
});
