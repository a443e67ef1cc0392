// The kernel tunables the kubelet expects (Go v1.20: pkg/kubelet/cm/container_manager_linux.go setupKernelTunables,
// with the values of pkg/util/sysctl): checked, and set or reported, as the container manager starts.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import { aggregateMessage } from './cgroup-names.js';

/** Reads and writes integer sysctls by their /proc/sys path (Go: utilsysctl.Interface). */
export interface Sysctl {
  get(name: string): Promise<number>;
  set(name: string, value: number): Promise<void>;
}

/** Sysctls under a /proc/sys root (tests give a directory of their own; the default is the machine's). */
export class ProcSysctl implements Sysctl {
  constructor(private readonly root = '/proc/sys') {}

  /** Go's GetSysctl: the file's content as an integer. */
  async get(name: string): Promise<number> {
    const text = (await readFile(join(this.root, name), 'utf8')).trim();
    const value = Number.parseInt(text, 10);
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value)) throw new Error(`sysctl ${name}: not an integer: ${JSON.stringify(text)}`);
    return value;
  }

  /** Go's SetSysctl: writes the value to the file. */
  async set(name: string, value: number): Promise<void> {
    await writeFile(join(this.root, name), String(value));
  }
}

/** The kernel tunables the kubelet expects and their values (Go: desiredState). */
export const KUBELET_KERNEL_TUNABLES: Readonly<Record<string, number>> = {
  'vm/overcommit_memory': 1,
  'vm/panic_on_oom': 0,
  'kernel/panic': 10,
  'kernel/panic_on_oops': 1,
  'kernel/keys/root_maxkeys': 1_000_000,
  'kernel/keys/root_maxbytes': 25_000_000,
};

/**
 * Go's KernelTunableBehavior: `modify` sets a differing tunable (the default), `error` fails on one
 * (--protect-kernel-defaults), `warn` reports it and leaves it.
 */
export type KernelTunableBehavior = 'modify' | 'error' | 'warn';

export interface KernelTunablesOptions {
  behavior: KernelTunableBehavior;
  /** Default: the machine's /proc/sys. */
  sysctl?: Sysctl;
  logger?: Logger;
}

/** What setupKernelTunables found: each tunable that differed, and what was done. */
export interface KernelTunableChange {
  name: string;
  expected: number;
  actual: number;
  action: 'set' | 'reported';
}

/**
 * Go's setupKernelTunables: every tunable is read; one that differs from {@link KUBELET_KERNEL_TUNABLES} is set
 * (`modify`), an error (`error`) or reported (`warn`). Every failure is collected and thrown as one error with
 * Go's texts (`invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0`), several as a
 * bracketed list.
 */
export async function setupKernelTunables(options: KernelTunablesOptions): Promise<KernelTunableChange[]> {
  const sysctl = options.sysctl ?? new ProcSysctl();
  const logger = options.logger ?? defaultLogger;
  const errors: Error[] = [];
  const changes: KernelTunableChange[] = [];
  for (const [name, expected] of Object.entries(KUBELET_KERNEL_TUNABLES)) {
    let actual: number;
    try {
      actual = await sysctl.get(name);
    } catch (error) {
      errors.push(error as Error);
      continue;
    }
    if (actual === expected) continue;
    switch (options.behavior) {
      case 'error':
        errors.push(new Error(`invalid kernel flag: ${name}, expected value: ${expected}, actual value: ${actual}`));
        break;
      case 'warn':
        logger.warn('Invalid kernel flag', { flag: name, expectedValue: expected, actualValue: actual });
        changes.push({ name, expected, actual, action: 'reported' });
        break;
      case 'modify':
        logger.info('Updating kernel flag', { flag: name, expectedValue: expected, actualValue: actual });
        try {
          await sysctl.set(name, expected);
          changes.push({ name, expected, actual, action: 'set' });
        } catch (error) {
          errors.push(error as Error);
        }
        break;
    }
  }
  if (errors.length > 0) throw new Error(aggregateMessage(errors));
  return changes;
}
