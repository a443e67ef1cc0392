// Go's CgroupName conversions for the cgroupfs driver and how Go prints names in messages.
import type { CgroupName } from './types.js';

/** Go: CgroupName.ToCgroupfs: "/" + the components joined with "/". */
export function cgroupfsName(name: CgroupName): string {
  return '/' + name.join('/');
}

/** Go: ParseCgroupfsToCgroupName: "/kubepods/burstable" -> ['kubepods', 'burstable']; "/" and "" -> []. */
export function parseCgroupfsToCgroupName(literal: string): CgroupName {
  const trimmed = literal.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? [] : trimmed.split('/').filter((part) => part !== '');
}

/** Go: NewCgroupName(base, components...). */
export function newCgroupName(base: CgroupName, ...components: string[]): CgroupName {
  return [...base, ...components];
}

/** Go's `%v` of a CgroupName: `[kubepods burstable pod1]`. */
export function formatCgroupName(name: CgroupName): string {
  return `[${name.join(' ')}]`;
}

/** Go's `%q` of a CgroupName: `["kubepods" "burstable"]`. */
export function quoteCgroupName(name: CgroupName): string {
  return `[${name.map((part) => JSON.stringify(part)).join(' ')}]`;
}

/** Go: utilerrors.NewAggregate(errs).Error(): one message alone, several as `[a, b]` (duplicates once). */
export function aggregateMessage(errors: readonly unknown[]): string {
  const messages = [...new Set(errors.map((e) => (e instanceof Error ? e.message : String(e))))];
  return messages.length === 1 ? messages[0] : `[${messages.join(', ')}]`;
}
