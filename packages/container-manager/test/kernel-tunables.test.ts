// setupKernelTunables against a fake /proc/sys directory: this machine's sysctls are never read or written.
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createLogger } from '@kubelet-ts/core';
import { KUBELET_KERNEL_TUNABLES, ProcSysctl, setupKernelTunables } from '../src/index.js';

/** A fake /proc/sys with Debian's defaults for the kubelet's tunables, or the values given. */
function fakeProcSys(t: { teardown(fn: () => void): void }, values: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'kts-proc-sys-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const initial: Record<string, string> = {
    'vm/overcommit_memory': '0',
    'vm/panic_on_oom': '0',
    'kernel/panic': '0',
    'kernel/panic_on_oops': '0',
    'kernel/keys/root_maxkeys': '1000000',
    'kernel/keys/root_maxbytes': '25000000',
    ...values,
  };
  for (const [name, value] of Object.entries(initial)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), `${value}\n`);
  }
  return root;
}

function capture() {
  const lines: string[] = [];
  return { lines, logger: createLogger({ sink: (line) => void lines.push(line) }) };
}

t.test("Go's desired values", async (t) => {
  t.same(KUBELET_KERNEL_TUNABLES, {
    'vm/overcommit_memory': 1,
    'vm/panic_on_oom': 0,
    'kernel/panic': 10,
    'kernel/panic_on_oops': 1,
    'kernel/keys/root_maxkeys': 1000000,
    'kernel/keys/root_maxbytes': 25000000,
  });
});

t.test('modify (Go without --protect-kernel-defaults): differing tunables are set, the rest left alone', async (t) => {
  const root = fakeProcSys(t);
  const { lines, logger } = capture();
  const changes = await setupKernelTunables({ behavior: 'modify', sysctl: new ProcSysctl(root), logger });
  t.same(changes.map((c) => [c.name, c.actual, c.expected, c.action]), [
    ['vm/overcommit_memory', 0, 1, 'set'],
    ['kernel/panic', 0, 10, 'set'],
    ['kernel/panic_on_oops', 0, 1, 'set'],
  ]);
  t.equal(readFileSync(join(root, 'vm/overcommit_memory'), 'utf8'), '1');
  t.equal(readFileSync(join(root, 'kernel/panic'), 'utf8'), '10');
  t.equal(readFileSync(join(root, 'kernel/keys/root_maxkeys'), 'utf8'), '1000000\n', 'an expected value is not rewritten');
  t.match(lines.join('\n'), /Updating kernel flag" flag="vm\/overcommit_memory" expectedValue=1 actualValue=0/);
  t.same(await setupKernelTunables({ behavior: 'modify', sysctl: new ProcSysctl(root), logger }), [], 'a second run finds nothing to do');
});

t.test("error (--protect-kernel-defaults): every differing tunable listed with Go's text, nothing written", async (t) => {
  const root = fakeProcSys(t);
  await t.rejects(setupKernelTunables({ behavior: 'error', sysctl: new ProcSysctl(root), logger: capture().logger }), {
    message:
      '[invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0, invalid kernel flag: kernel/panic, expected value: 10, actual value: 0, invalid kernel flag: kernel/panic_on_oops, expected value: 1, actual value: 0]',
  });
  t.equal(readFileSync(join(root, 'vm/overcommit_memory'), 'utf8'), '0\n', 'untouched');
  const one = fakeProcSys(t, { 'vm/overcommit_memory': '1', 'kernel/panic': '10' });
  await t.rejects(setupKernelTunables({ behavior: 'error', sysctl: new ProcSysctl(one) }), {
    message: 'invalid kernel flag: kernel/panic_on_oops, expected value: 1, actual value: 0',
  }, 'one error alone, not in brackets');
  const good = fakeProcSys(t, { 'vm/overcommit_memory': '1', 'kernel/panic': '10', 'kernel/panic_on_oops': '1' });
  t.same(await setupKernelTunables({ behavior: 'error', sysctl: new ProcSysctl(good) }), [], 'all as expected: fine');
});

t.test('warn: each differing tunable reported, nothing written', async (t) => {
  const root = fakeProcSys(t);
  const { lines, logger } = capture();
  const changes = await setupKernelTunables({ behavior: 'warn', sysctl: new ProcSysctl(root), logger });
  t.same(changes.map((c) => c.action), ['reported', 'reported', 'reported']);
  t.equal(lines.filter((line) => line.startsWith('W')).length, 3);
  t.equal(readFileSync(join(root, 'kernel/panic'), 'utf8'), '0\n');
});

t.test('an unreadable or malformed tunable is an error naming it; the others are still handled', async (t) => {
  const root = fakeProcSys(t, { 'kernel/panic': 'ten' });
  rmSync(join(root, 'vm/panic_on_oom'));
  await t.rejects(setupKernelTunables({ behavior: 'modify', sysctl: new ProcSysctl(root), logger: capture().logger }), {
    message: /^\[ENOENT: no such file or directory, open '.*vm\/panic_on_oom', sysctl kernel\/panic: not an integer: "ten"\]$/,
  });
  t.equal(readFileSync(join(root, 'vm/overcommit_memory'), 'utf8'), '1', 'the readable ones were set');
});

t.test('ContainerManager.start checks the tunables first: --protect-kernel-defaults with a differing value fails the start', async (t) => {
  const { ContainerManager } = await import('../src/index.js');
  const root = fakeProcSys(t);
  const capacity = { milliCpu: 2000, memoryBytes: 4 * 2 ** 30 };
  const protect = new ContainerManager({ cgroupsPerQOS: false, enforceNodeAllocatable: [], capacity, kernelTunables: { behavior: 'error', sysctl: new ProcSysctl(root) }, logger: capture().logger });
  await t.rejects(protect.start(() => []), { message: /invalid kernel flag: vm\/overcommit_memory, expected value: 1, actual value: 0/ });
  const { lines, logger } = capture();
  const warn = new ContainerManager({ cgroupsPerQOS: false, enforceNodeAllocatable: [], capacity, kernelTunables: { behavior: 'warn', sysctl: new ProcSysctl(root) }, logger });
  await warn.start(() => []);
  t.teardown(() => warn.stop());
  t.match(lines.join('\n'), /Invalid kernel flag" flag="kernel\/panic" expectedValue=10 actualValue=0/);
});
