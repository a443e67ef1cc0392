// Network errors as Go's net package prints them, for the kubelet's HTTP, TCP and gRPC clients (probes, hooks).

/** Go's net.JoinHostPort: brackets an IPv6 literal. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

const errnoText: Record<string, string> = {
  ECONNREFUSED: 'connect: connection refused',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  EADDRNOTAVAIL: 'connect: cannot assign requested address',
  EACCES: 'connect: permission denied',
  EPERM: 'connect: operation not permitted',
  ETIMEDOUT: 'i/o timeout',
  UND_ERR_CONNECT_TIMEOUT: 'i/o timeout',
};

/** The errno-like code of an error or of its cause chain. */
export function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A dial error as Go prints it: `dial tcp 10.1.2.3:80: connect: connection refused`,
 * `dial tcp 10.1.2.3:80: i/o timeout`, `dial tcp: lookup web.invalid: no such host`.
 * Returns undefined for errors that are not about dialing.
 */
export function goDialError(err: unknown, host: string, port: number | string): string | undefined {
  const code = errorCode(err);
  if (code === undefined) return undefined;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return `dial tcp: lookup ${host.replace(/^\[|\]$/g, '')}: no such host`;
  const text = errnoText[code];
  return text ? `dial tcp ${joinHostPort(host.replace(/^\[|\]$/g, ''), port)}: ${text}` : undefined;
}
