// Go's CgroupName conversions for the systemd driver (pkg/kubelet/cm/cgroup_manager_linux.go: ToSystemd,
// ParseSystemdToCgroupName, updateSystemdCgroupInfo) and libcontainer's ExpandSlice (cgroups/systemd).
import { posix } from 'node:path';
import { formatCgroupName } from './cgroup-names.js';
import type { CgroupName } from './types.js';

/** Go: systemdSuffix. */
export const SYSTEMD_SLICE_SUFFIX = '.slice';
/** The slice systemd puts at the root of the tree. */
export const SYSTEMD_ROOT_SLICE = '-.slice';

/** Go: escapeSystemdCgroupName: systemd reads "-" as a step in the hierarchy, so a component's "-" becomes "_". */
export function escapeSystemdCgroupName(part: string): string {
  return part.replaceAll('-', '_');
}

/** Go: unescapeSystemdCgroupName. */
export function unescapeSystemdCgroupName(part: string): string {
  return part.replaceAll('_', '-');
}

/** Go: IsSystemdStyleName: the name ends with ".slice". */
export function isSystemdStyleName(name: string): boolean {
  return name.endsWith(SYSTEMD_SLICE_SUFFIX);
}

/**
 * libcontainer's ExpandSlice: the cgroupfs path of a slice, "test-a-b.slice" -> "/test.slice/test-a.slice/test-a-b.slice";
 * "-.slice" -> "/". Throws `invalid slice name: <slice>` for a name without the suffix, with a "/", or with an empty
 * component ("test--a.slice", "-test.slice", "test-.slice").
 */
export function expandSlice(slice: string): string {
  if (slice.length < SYSTEMD_SLICE_SUFFIX.length || !slice.endsWith(SYSTEMD_SLICE_SUFFIX) || slice.includes('/')) {
    throw new Error(`invalid slice name: ${slice}`);
  }
  const sliceName = slice.slice(0, -SYSTEMD_SLICE_SUFFIX.length);
  if (sliceName === '-') return '/';
  let path = '';
  let prefix = '';
  for (const component of sliceName.split('-')) {
    if (component === '') throw new Error(`invalid slice name: ${slice}`);
    path += `/${prefix}${component}${SYSTEMD_SLICE_SUFFIX}`;
    prefix += `${component}-`;
  }
  return path;
}

/**
 * Go: CgroupName.ToSystemd: the components escaped, joined with "-", ".slice" appended and expanded —
 * ['kubepods', 'burstable', 'pod1234-abcd'] -> "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice";
 * [] -> "/". Go panics where ExpandSlice fails (an empty component); this throws.
 */
export function toSystemdName(name: CgroupName): string {
  if (name.length === 0 || (name.length === 1 && name[0] === '')) return '/';
  const joined = name.map(escapeSystemdCgroupName).join('-') + SYSTEMD_SLICE_SUFFIX;
  try {
    return expandSlice(joined);
  } catch (err) {
    throw new Error(`error converting cgroup name ${formatCgroupName(name)} to systemd format: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Go: ParseSystemdToCgroupName: only the last path element counts (systemd encodes the whole hierarchy in it):
 * ".../kubepods-burstable-pod1234_abcd.slice" -> ['kubepods', 'burstable', 'pod1234-abcd'].
 */
export function parseSystemdToCgroupName(literal: string): CgroupName {
  let driverName = posix.basename(literal);
  if (driverName === '') driverName = literal === '' ? '.' : '/';
  if (driverName.endsWith(SYSTEMD_SLICE_SUFFIX)) driverName = driverName.slice(0, -SYSTEMD_SLICE_SUFFIX.length);
  return driverName.split('-').map(unescapeSystemdCgroupName);
}

/** The cgroupfs path components of a CgroupName on the systemd driver: ['kubepods', 'burstable'] -> ['kubepods.slice', 'kubepods-burstable.slice']. */
export function systemdCgroupPath(name: CgroupName): CgroupName {
  return toSystemdName(name).split('/').filter((part) => part !== '');
}

/** libcontainer's configs.Cgroup Parent and Name as Go's updateSystemdCgroupInfo sets them. */
export interface SystemdUnitInfo {
  /** The parent slice: "-.slice" at the root, else the parent's unit name. */
  parent: string;
  /** The unit, e.g. "kubepods-burstable.slice". */
  name: string;
}

/** Go: updateSystemdCgroupInfo: Parent = the base of ToSystemd's directory ("-.slice" for "/"), Name = its base. */
export function systemdUnitInfo(name: CgroupName): SystemdUnitInfo {
  const full = toSystemdName(name);
  const slash = full.lastIndexOf('/');
  const dir = full.slice(0, slash + 1);
  const base = full.slice(slash + 1);
  return { parent: dir === '/' ? SYSTEMD_ROOT_SLICE : posix.basename(dir), name: base };
}
