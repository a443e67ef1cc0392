import t from 'tap';
import { readFileSync } from 'node:fs';
import { processResources } from '../src/index.js';

t.test('processResources reads this process from /proc: its RSS and the CPU it has used', async (t) => {
  const before = processResources(process.pid);
  const vmRssKb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
  t.ok(Math.abs(before.rssBytes - vmRssKb * 1024) < 64 << 20, 'RSS in bytes, as /proc/<pid>/status gives it in kB');
  // Spin until this process has used 200 ms more CPU by its own count, however loaded the machine is.
  const cpuBefore = process.cpuUsage();
  while (process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system < 200_000) Math.sqrt(Math.random());
  const after = processResources(process.pid);
  t.ok(after.cpuSeconds - before.cpuSeconds >= 0.1, `CPU seconds grow with work (${before.cpuSeconds} -> ${after.cpuSeconds})`);
  t.throws(() => processResources(2 ** 22 + 7), 'a process that does not exist is an error');
});
