// Finds a cgroup2 mount this test run may create its own cgroups below (root, mounted read-write).
import { accessSync, constants, readFileSync } from 'node:fs';

/** The mount point of a writable cgroup2 mount from /proc/self/mountinfo, or why there is none. */
export function findWritableCgroup2Mount(): string | { reason: string } {
  if (process.platform !== 'linux') return { reason: `not Linux (${process.platform})` };
  if (process.getuid?.() !== 0) return { reason: 'not running as root' };
  let mountinfo: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch (err) {
    return { reason: `cannot read /proc/self/mountinfo: ${(err as Error).message}` };
  }
  const found: string[] = [];
  for (const line of mountinfo.split('\n')) {
    // <id> <parent> <major:minor> <root> <mount point> <options> [optional fields] - <fstype> <source> <super options>
    const [left, right] = line.split(' - ');
    if (right === undefined || right.split(' ')[0] !== 'cgroup2') continue;
    const fields = left.split(' ');
    const mountPoint = fields[4].replace(/\\040/g, ' ');
    found.push(mountPoint);
    if (!fields[5].split(',').includes('rw')) continue;
    try {
      accessSync(mountPoint, constants.W_OK);
      readFileSync(`${mountPoint}/cgroup.controllers`, 'utf8');
      return mountPoint;
    } catch {
      continue;
    }
  }
  return { reason: found.length === 0 ? 'no cgroup2 mount in /proc/self/mountinfo' : `no writable cgroup2 mount (seen: ${found.join(', ')})` };
}
