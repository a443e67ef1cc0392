import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { parseMeminfo } from '@kubelet-ts/core';

/** What the node offers its pods before reservations. */
export interface NodeCapacity {
  milliCpu: number;
  memoryBytes: number;
  pids?: number;
}

/** The node's capacity as cadvisor reads it: logical CPUs, MemTotal and the kernel's pid_max. */
export function nodeCapacity(procRoot = '/proc'): NodeCapacity {
  let memoryBytes = totalmem();
  let pids: number | undefined;
  try {
    memoryBytes = parseMeminfo(readFileSync(`${procRoot}/meminfo`, 'utf8')).get('MemTotal') ?? memoryBytes;
  } catch {
    // No /proc/meminfo (not Linux): the OS's figure.
  }
  try {
    pids = Number.parseInt(readFileSync(`${procRoot}/sys/kernel/pid_max`, 'utf8').trim(), 10) || undefined;
  } catch {
    // No pid_max: no pid capacity, as cadvisor.
  }
  return { milliCpu: availableParallelism() * 1000, memoryBytes, pids };
}
