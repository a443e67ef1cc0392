// The sysctl admit handler (Go v1.20: pkg/kubelet/sysctl whitelist.go patternWhitelist, namespace.go,
// and the safe list of pkg/security/podsecuritypolicy/sysctl SafeSysctlWhitelist). A pod may set a
// sysctl in spec.securityContext.sysctls only when it is on the safe list or matches an
// --allowed-unsafe-sysctls pattern, and a net (ipc) sysctl not when the pod shares the host's network
// (IPC) namespace.
import type { PodAdmitAttributes, PodAdmitHandler, PodAdmitResult } from './admission.js';

export const SysctlForbiddenReason = 'SysctlForbidden';

/** The sysctls every pod may set (Go v1.20's SafeSysctlWhitelist). */
export function safeSysctlAllowlist(): string[] {
  return ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range'];
}

/** The kernel namespace isolating a sysctl; '' when it is not known to be namespaced. */
export type SysctlNamespace = 'ipc' | 'net' | '';

const namespaces: Record<string, SysctlNamespace> = { 'kernel.sem': 'ipc' };
const prefixNamespaces: [string, SysctlNamespace][] = [
  ['kernel.shm', 'ipc'],
  ['kernel.msg', 'ipc'],
  ['fs.mqueue.', 'ipc'],
  ['net.', 'net'],
];

/** sysctl.NamespacedBy. */
export function namespacedBy(name: string): SysctlNamespace {
  if (Object.prototype.hasOwnProperty.call(namespaces, name)) return namespaces[name];
  for (const [prefix, ns] of prefixNamespaces) if (name.startsWith(prefix)) return ns;
  return '';
}

export const SYSCTL_MAX_LENGTH = 253;
/** policy validation's SysctlPatternFmt (Go v1.20). */
export const SYSCTL_PATTERN_FMT = '([a-z0-9]([-_a-z0-9]*[a-z0-9])?\\.)*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]';
const sysctlPattern = new RegExp(`^${SYSCTL_PATTERN_FMT}$`);

/** policy validation.IsValidSysctlPattern: a sysctl name, or a prefix ending in `*`. */
export function isValidSysctlPattern(pattern: string): boolean {
  return pattern.length <= SYSCTL_MAX_LENGTH && sysctlPattern.test(pattern);
}

export interface SysctlAllowlistOptions {
  /** --allowed-unsafe-sysctls: names or prefixes ending in `*` (e.g. `kernel.msg*`, `net.core.somaxconn`). */
  allowedUnsafeSysctls?: readonly string[];
  /** Default safeSysctlAllowlist(). */
  safeSysctls?: readonly string[];
}

/**
 * Go: sysctl.NewWhitelist(append(SafeSysctlWhitelist(), allowedUnsafeSysctls...)). The constructor throws
 * with Go's message for a pattern that is malformed or not known to be namespaced (Go's kubelet then
 * refuses to start).
 */
export class SysctlAllowlistAdmitHandler implements PodAdmitHandler {
  private readonly sysctls = new Map<string, SysctlNamespace>();
  private readonly prefixes = new Map<string, SysctlNamespace>();

  constructor(opts: SysctlAllowlistOptions = {}) {
    const patterns = [...(opts.safeSysctls ?? safeSysctlAllowlist()), ...(opts.allowedUnsafeSysctls ?? [])];
    for (const s of patterns) {
      if (!isValidSysctlPattern(s)) {
        throw new Error(`sysctl ${JSON.stringify(s)} must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_PATTERN_FMT}`);
      }
      if (s.endsWith('*')) {
        const prefix = s.slice(0, -1);
        const ns = namespacedBy(prefix);
        if (ns === '') throw new Error(`the sysctls ${JSON.stringify(s)} are not known to be namespaced`);
        this.prefixes.set(prefix, ns);
      } else {
        const ns = namespacedBy(s);
        if (ns === '') throw new Error(`the sysctl ${JSON.stringify(s)} are not known to be namespaced`);
        this.sysctls.set(s, ns);
      }
    }
  }

  /** validateSysctl: undefined when allowed, else why not. */
  validateSysctl(sysctl: string, hostNet: boolean, hostIPC: boolean): string | undefined {
    const hostNamespaceError = (ns: SysctlNamespace): string | undefined => {
      if ((ns === 'ipc' && hostIPC) || (ns === 'net' && hostNet)) return `${JSON.stringify(sysctl)} not allowed with host ${ns} enabled`;
      return undefined;
    };
    const exact = this.sysctls.get(sysctl);
    if (exact !== undefined) return hostNamespaceError(exact);
    for (const [prefix, ns] of this.prefixes) if (sysctl.startsWith(prefix)) return hostNamespaceError(ns);
    return `${JSON.stringify(sysctl)} not whitelisted`;
  }

  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    const spec = attrs.pod.spec;
    const sysctls = spec?.securityContext?.sysctls ?? [];
    if (sysctls.length === 0) return { admit: true };
    const hostNet = spec?.hostNetwork ?? false;
    const hostIPC = spec?.hostIPC ?? false;
    for (const s of sysctls) {
      const err = this.validateSysctl(s.name, hostNet, hostIPC);
      if (err !== undefined) return { admit: false, reason: SysctlForbiddenReason, message: `forbidden sysctl: ${err}` };
    }
    return { admit: true };
  }
}
