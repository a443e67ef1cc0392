import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// A live process's memory and CPU from /proc: what the benchmarks report beside each figure (the kubelet's RSS
// next to every density figure, CPU seconds per pod start).

export interface ProcessResources {
  rssBytes: number;
  cpuSeconds: number;
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicks;
}

/** RSS and CPU time (user + system) of a live process, from /proc/<pid>/status and /proc/<pid>/stat. */
export function processResources(pid: number): ProcessResources {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssBytes: rssKb * 1024, cpuSeconds: ticks / ticksPerSecond() };
}
