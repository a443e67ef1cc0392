// /proc/meminfo, read by the node status (memory capacity) and the stats provider (capacity, and the
// root cgroup's usage where cgroup v2 has no memory.current for it).

/**
 * /proc/meminfo text to values by field name, in bytes where the kernel gives kB
 * ("MemTotal:  16314060 kB" -> 16705597440) and as they stand otherwise ("HugePages_Total: 3" -> 3).
 */
export function parseMeminfo(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(\S+):\s+(\d+)(\s+kB)?/.exec(line);
    if (match) values.set(match[1], Number(match[2]) * (match[3] ? 1024 : 1));
  }
  return values;
}
