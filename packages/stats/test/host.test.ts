import t from 'tap';
import { linkSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CgroupFileError,
  CpuUsageCache,
  diskUsage,
  FsCgroupReader,
  parseDefaultRouteInterface,
  parseNetDev,
  readHostNetwork,
  readTaskLimits,
} from '../src/index.js';
import { GiB, MiB, NET_DEV, NET_ROUTE, tempDir, writeCgroupV1, writeCgroupV2, writeFile, writeProc } from './helpers.js';

t.test('cgroup v1: cpuacct.usage, memory usage, working set = usage - total_inactive_file, limit', async (t) => {
  const root = tempDir(t);
  writeCgroupV1(root, '/', { cpuUsageNanos: 123_000_000_000, usageBytes: 2 * GiB, inactiveFileBytes: 512 * MiB, rssBytes: GiB, pgfault: 7, pgmajfault: 3 });
  writeCgroupV1(root, '/kubepods', { cpuUsageNanos: 5, usageBytes: 100, inactiveFileBytes: 300, limitBytes: 4 * GiB }, 'cpu,cpuacct');
  const reader = new FsCgroupReader({ cgroupRoot: root });
  t.equal(await reader.version(), 1);
  t.equal(await reader.readCpuUsageNanos('/'), 123_000_000_000);
  t.same(await reader.readMemory('/'), {
    usageBytes: 2 * GiB,
    workingSetBytes: 2 * GiB - 512 * MiB,
    rssBytes: GiB,
    pageFaults: 7,
    majorPageFaults: 3,
  }, 'the default v1 limit (PAGE_COUNTER_MAX) means unlimited: no limitBytes');
  const pods = await reader.readMemory('/kubepods');
  t.equal(pods.workingSetBytes, 0, 'inactive file above usage: working set 0, never negative');
  t.equal(pods.limitBytes, 4 * GiB);
});

t.test('cgroup v1: cpuacct co-mounted as cpu,cpuacct is found', async (t) => {
  const root = tempDir(t);
  writeCgroupV1(root, '/', { cpuUsageNanos: 42, usageBytes: 1 }, 'cpu,cpuacct');
  t.equal(await new FsCgroupReader({ cgroupRoot: root }).readCpuUsageNanos('/'), 42);
});

t.test('cgroup v2: cpu.stat usage_usec, memory.current, inactive_file, anon, memory.max', async (t) => {
  const root = tempDir(t);
  writeCgroupV2(root, '/kubepods', { cpuUsageNanos: 9_000_000, usageBytes: 1000, inactiveFileBytes: 200, rssBytes: 600, pgfault: 11, pgmajfault: 1, limitBytes: 5000 });
  writeCgroupV2(root, '/kubepods/besteffort', { cpuUsageNanos: 1000, usageBytes: 10 });
  const reader = new FsCgroupReader({ cgroupRoot: root });
  t.equal(await reader.version(), 2);
  t.equal(await reader.readCpuUsageNanos('/kubepods'), 9_000_000);
  t.same(await reader.readMemory('/kubepods'), { usageBytes: 1000, workingSetBytes: 800, rssBytes: 600, pageFaults: 11, majorPageFaults: 1, limitBytes: 5000 });
  t.equal((await reader.readMemory('/kubepods/besteffort')).limitBytes, undefined, 'memory.max "max" is no limit');
});

t.test('cgroup v2 root: no memory.current, usage emulated from /proc/meminfo as runc does', async (t) => {
  const root = tempDir(t);
  const proc = tempDir(t);
  writeProc(proc, { memTotalKb: 4 * 1024 * 1024, memFreeKb: 1024 * 1024 });
  writeCgroupV2(root, '/', { cpuUsageNanos: 1000, usageBytes: 1, inactiveFileBytes: GiB }, { memoryCurrent: false });
  const memory = await new FsCgroupReader({ cgroupRoot: root, procRoot: proc }).readMemory('/');
  t.equal(memory.usageBytes, 3 * GiB);
  t.equal(memory.workingSetBytes, 2 * GiB);
});

t.test('a missing or garbled cgroup file rejects with an error naming the file', async (t) => {
  const root = tempDir(t);
  writeCgroupV1(root, '/', { usageBytes: 1 });
  const reader = new FsCgroupReader({ cgroupRoot: root });
  const missing = await reader.readCpuUsageNanos('/').catch((err: unknown) => err);
  t.ok(missing instanceof CgroupFileError);
  t.equal((missing as CgroupFileError).code, 'ENOENT');
  t.match((missing as Error).message, `read ${join(root, 'cpuacct', 'cpuacct.usage')}`);
  writeFile(join(root, 'memory/gone/memory.usage_in_bytes'), 'garbage\n');
  await t.rejects(reader.readMemory('/gone'), { message: new RegExp(`read ${join(root, 'memory/gone/memory.usage_in_bytes')}: not a number`) });
  await t.rejects(reader.readMemory('/nope'), { name: 'CgroupFileError', code: 'ENOENT' });
});

t.test('network: /proc/net/dev without lo and veth, default interface from the default route', async (t) => {
  t.same(parseNetDev(NET_DEV), [
    { name: 'eth0', rxBytes: 1000, rxErrors: 1, txBytes: 2000, txErrors: 2 },
    { name: 'eth1', rxBytes: 3000, rxErrors: 0, txBytes: 4000, txErrors: 0 },
  ]);
  t.equal(parseDefaultRouteInterface(NET_ROUTE), 'eth1');
  t.equal(parseDefaultRouteInterface('Iface\tDestination\n'), undefined);
  const proc = tempDir(t);
  writeProc(proc);
  t.equal((await readHostNetwork(proc)).defaultInterface, 'eth1');
  writeFile(join(proc, 'net/route'), 'Iface\tDestination\n');
  t.equal((await readHostNetwork(proc)).defaultInterface, 'eth0', 'no default route: eth0, as Go assumes');
});

t.test('task limits: min(pid_max, threads-max); tasks from /proc/loadavg, else /proc/<pid> dirs', async (t) => {
  const proc = tempDir(t);
  writeProc(proc);
  t.same(await readTaskLimits(proc), { maxpid: 63336, curproc: 345 });
  const bare = tempDir(t);
  writeProc(bare, { loadavg: null });
  for (const pid of ['1', '22', '333']) mkdirSync(join(bare, pid));
  mkdirSync(join(bare, 'self-not-a-pid'));
  t.same(await readTaskLimits(bare), { maxpid: 63336, curproc: 3 });
});

t.test('diskUsage counts allocated blocks once per inode and every entry, the root included', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'a.log'), 'x'.repeat(10_000));
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'b.log'), 'y');
  linkSync(join(dir, 'a.log'), join(dir, 'sub', 'hardlink'));
  const blocks = (p: string) => lstatSync(p).blocks * 512;
  const usage = await diskUsage(dir);
  t.equal(usage.inodes, 5, 'dir, a.log, sub, b.log, hardlink');
  t.equal(usage.bytes, blocks(dir) + blocks(join(dir, 'a.log')) + blocks(join(dir, 'sub')) + blocks(join(dir, 'sub', 'b.log')));
  await t.rejects(diskUsage(join(dir, 'missing')), { message: /^du .*missing: ENOENT/ });
});

t.test('CpuUsageCache: rate between samples, reset on a counter going back, min interval, cleanup', async (t) => {
  const cache = new CpuUsageCache();
  const s = 1e9;
  t.equal(cache.update('c', { timestampNs: 10 * s, usageCoreNanoSeconds: 1 * s }), undefined, 'first sample');
  t.equal(cache.update('c', { timestampNs: 20 * s, usageCoreNanoSeconds: 6 * s }), 500_000_000, '5 s of CPU in 10 s: half a core');
  t.equal(cache.get('c'), 500_000_000);
  t.equal(cache.update('c', { timestampNs: 20.5 * s, usageCoreNanoSeconds: 7 * s }, 1 * s), 500_000_000, 'too close: previous rate, sample kept');
  t.equal(cache.update('c', { timestampNs: 30 * s, usageCoreNanoSeconds: 26 * s }, 1 * s), 2_000_000_000, 'rate from the kept sample');
  t.equal(cache.update('c', { timestampNs: 40 * s, usageCoreNanoSeconds: 1 * s }), undefined, 'counter went back: restarted');
  t.equal(cache.get('c'), undefined);
  t.equal(cache.update('c', { timestampNs: 40 * s, usageCoreNanoSeconds: 2 * s }), undefined, 'zero interval gives no rate');
  cache.update('old', { timestampNs: 0, usageCoreNanoSeconds: 0 });
  cache.cleanup(10 * 60_000 + 30_000);
  t.equal(cache.size, 1, 'the sample from time 0 is older than 10 min');
});
