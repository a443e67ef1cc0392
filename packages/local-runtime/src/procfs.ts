import { readdirSync, readFileSync } from 'node:fs';

/** Resource usage of one process group, summed over its processes. */
export interface GroupUsage {
  /** CPU time (user + system) in nanoseconds. */
  cpuNanos: number;
  /** Resident set size in bytes. */
  rssBytes: number;
  processes: number;
}

// USER_HZ and the page size are 100 and 4096 on every Linux a kubelet runs on.
const NANOS_PER_TICK = 1e9 / 100;
const PAGE_SIZE = 4096;

/**
 * The stat fields of every process in /proc (after the command name, which may contain spaces and
 * parentheses: field N of proc(5) is at index N - 3), with its pid; undefined when /proc cannot be read.
 */
function readProcStats(): Array<{ pid: number; fields: string[] }> | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const stats: Array<{ pid: number; fields: string[] }> = [];
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    stats.push({ pid: Number(entry), fields: stat.slice(stat.lastIndexOf(')') + 2).split(' ') });
  }
  return stats;
}

/**
 * Reads /proc once and sums CPU time and RSS per process group for the given group ids (a local
 * runtime container is the process group of its init process). Empty usage off Linux.
 */
export function readGroupUsage(pgids: Iterable<number>): Map<number, GroupUsage> {
  const wanted = new Set(pgids);
  const result = new Map<number, GroupUsage>();
  if (wanted.size === 0) return result;
  for (const { fields } of readProcStats() ?? []) {
    const pgrp = Number(fields[2]);
    if (!wanted.has(pgrp)) continue;
    const usage = result.get(pgrp) ?? { cpuNanos: 0, rssBytes: 0, processes: 0 };
    usage.cpuNanos += (Number(fields[11]) + Number(fields[12])) * NANOS_PER_TICK;
    usage.rssBytes += Number(fields[21]) * PAGE_SIZE;
    usage.processes += 1;
    result.set(pgrp, usage);
  }
  return result;
}

/**
 * Pids of the processes of a group that are not zombies (a killed process whose new parent has not
 * reaped it yet is gone for every purpose but kill(2)); undefined when /proc cannot be read.
 */
export function liveGroupMembers(pgid: number): number[] | undefined {
  const stats = readProcStats();
  if (!stats) return undefined;
  return stats.filter(({ fields }) => Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X').map(({ pid }) => pid);
}
