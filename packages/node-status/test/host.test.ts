// Taints, node IPs and machine facts.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  classifyIP,
  goArch,
  goOS,
  parseNodeIPs,
  parseOsRelease,
  parseTaint,
  parseTaints,
  readMachineInfo,
  resolveNodeIPs,
  validateNodeIP,
} from '../src/index.js';
import { FakeNodeLease, FakeNodeStatusManager } from '../src/testing.js';
import { tempDir } from './helpers.js';

t.test('taints: Go forms and errors', async (t) => {
  t.same(parseTaints('a=b:NoSchedule,example.com/c:NoExecute,d'), [
    { key: 'a', value: 'b', effect: 'NoSchedule' },
    { key: 'example.com/c', effect: 'NoExecute' },
    { key: 'd', effect: '' },
  ]);
  t.same(parseTaints(''), []);
  t.throws(() => parseTaint('a=b:Never'), { message: 'invalid taint effect: Never, unsupported taint effect' });
  t.throws(() => parseTaint('a=b=c:NoSchedule'), { message: 'invalid taint spec: a=b=c:NoSchedule' });
  t.throws(() => parseTaint('a:b:c'), { message: 'invalid taint spec: a:b:c' });
  t.throws(() => parseTaint('-bad:NoSchedule'), { message: /^invalid taint spec: -bad:NoSchedule, name part must consist of/ });
  t.throws(() => parseTaint('a=b c:NoSchedule'), { message: /^invalid taint spec: a=b c:NoSchedule, a valid label/ });
});

t.test('node IPs: parsing, classification, validation', async (t) => {
  t.same(parseNodeIPs('10.0.0.1'), ['10.0.0.1']);
  t.same(parseNodeIPs('10.0.0.1,fd00::1'), ['10.0.0.1', 'fd00::1']);
  t.same(parseNodeIPs(undefined), []);
  t.throws(() => parseNodeIPs('10.0.0.1,10.0.0.2'), { message: /dual-stack pair/ });
  t.throws(() => parseNodeIPs('nope'), { message: 'invalid ip "nope" in --node-ip' });
  t.equal(classifyIP('127.0.0.1'), 'loopback');
  t.equal(classifyIP('::1'), 'loopback');
  t.equal(classifyIP('::ffff:127.0.0.1'), 'loopback');
  t.equal(classifyIP('0.0.0.0'), 'unspecified');
  t.equal(classifyIP('::'), 'unspecified');
  t.equal(classifyIP('169.254.1.1'), 'link-local');
  t.equal(classifyIP('fe80::1'), 'link-local');
  t.equal(classifyIP('224.0.0.1'), 'multicast');
  t.equal(classifyIP('ff02::1'), 'multicast');
  t.equal(classifyIP('10.1.2.3'), 'unicast');
  t.equal(classifyIP('2001:db8::1'), 'unicast');
  const ifaces = () => ['10.0.0.5', '2001:db8:0:0::5'];
  t.doesNotThrow(() => validateNodeIP('10.0.0.5', ifaces));
  t.doesNotThrow(() => validateNodeIP('2001:db8::5', ifaces), 'IPv6 compared canonically');
  t.throws(() => validateNodeIP('127.0.0.1', ifaces), { message: "nodeIP can't be loopback address" });
  t.throws(() => validateNodeIP('224.0.0.1', ifaces), { message: "nodeIP can't be a multicast address" });
  t.throws(() => validateNodeIP('169.254.0.1', ifaces), { message: "nodeIP can't be a link-local unicast address" });
  t.throws(() => validateNodeIP('0.0.0.0', ifaces), { message: "nodeIP can't be an all zeros address" });
  t.throws(() => validateNodeIP('10.0.0.6', ifaces), { message: 'node IP: "10.0.0.6" not found in the host\'s network interfaces' });
});

t.test('node IP detection order', async (t) => {
  const base = {
    nodeName: 'n1',
    hostname: 'n1',
    nodeIPs: [] as string[],
    interfaceAddresses: () => ['10.0.0.5'],
    lookupHost: async () => ['192.168.0.9'],
    defaultRouteAddresses: () => ['10.0.0.5', 'fd00::5'],
  };
  t.same(await resolveNodeIPs({ ...base, hostname: '172.16.0.1' }), ['172.16.0.1'], 'a hostname that is an IP');
  t.same(await resolveNodeIPs(base), ['192.168.0.9'], 'DNS of the node name');
  t.same(await resolveNodeIPs({ ...base, lookupHost: async () => ['127.0.0.1'] }), ['10.0.0.5'], 'loopback DNS answers skipped');
  t.same(await resolveNodeIPs({ ...base, nodeIPs: ['::'], lookupHost: async () => ['192.168.0.9', 'fd00::9'] }), ['fd00::9'], ':: prefers IPv6');
  t.same(await resolveNodeIPs({ ...base, nodeIPs: ['10.0.0.5'] }), ['10.0.0.5'], 'specified');
  await t.rejects(resolveNodeIPs({ ...base, lookupHost: async () => Promise.reject(new Error('no such host')), defaultRouteAddresses: () => [] }), {
    message: "can't get ip address of node n1. error: no such host",
  });
});

t.test('machine facts: parsers and the host reader', async (t) => {
  t.equal(parseOsRelease('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'), 'Debian GNU/Linux 12 (bookworm)');
  t.equal(parseOsRelease(undefined), 'Linux');
  t.equal(goArch('x64'), 'amd64');
  t.equal(goArch('arm64'), 'arm64');
  t.equal(goOS('linux'), 'linux');
  t.equal(goOS('win32'), 'windows');
  const dir = await tempDir(t);
  await writeFile(join(dir, 'f'), 'x');
  const info = await readMachineInfo(dir);
  t.ok(info.numCores >= 1);
  t.ok(info.memoryCapacity > 0);
  t.ok(info.kernelVersion.length > 0);
  t.ok((info.rootfsCapacity ?? 0) > 0, 'statfs of the root dir');
  const missing = await readMachineInfo(join(dir, 'does-not-exist'));
  t.equal(missing.rootfsCapacity, undefined);
});

t.test('testing fakes', async (t) => {
  const m = new FakeNodeStatusManager({ metadata: { name: 'n' } });
  m.start();
  await m.syncNodeStatus();
  t.ok(m.started && m.isRegistered());
  t.equal(m.syncs, 1);
  t.equal(m.lastNode()!.metadata!.name, 'n');
  m.error = new Error('boom');
  await t.rejects(m.registerNode(), { message: 'boom' });
  await m.stop();
  t.ok(m.stopped);
  const l = new FakeNodeLease();
  l.start();
  await l.sync();
  await l.stop();
  t.same([l.started, l.syncs, l.stopped, l.latestLease()], [true, 1, true, undefined]);
});
