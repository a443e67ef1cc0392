// TCP socket probes (Go: pkg/probe/tcp DoTCPProbe).
import { connect } from 'node:net';
import { errorText, realClock, type Clock } from '@kubelet-ts/core';
import { goDialError, joinHostPort, type ProbeResponse } from './probe.js';

export interface TcpProbeOptions {
  host: string;
  port: number;
  /** Default 1. */
  timeoutSeconds?: number;
  clock?: Pick<Clock, 'setTimeout'>;
}

/**
 * Opens a TCP connection and closes it at once: success when it connects, otherwise a failure with
 * Go's dial error (`dial tcp 127.0.0.1:1: connect: connection refused`, `dial tcp ...: i/o timeout`).
 * Never throws.
 */
export function tcpProbe(opts: TcpProbeOptions): Promise<ProbeResponse> {
  const clock = opts.clock ?? realClock;
  const timeoutMs = (opts.timeoutSeconds ?? 1) * 1000;
  const host = opts.host.replace(/^\[|\]$/g, '');
  const addr = joinHostPort(host, opts.port);
  return new Promise<ProbeResponse>((resolve) => {
    let done = false;
    const finish = (response: ProbeResponse): void => {
      if (done) return;
      done = true;
      timer?.cancel();
      socket.destroy();
      resolve(response);
    };
    const socket = connect({ host, port: opts.port });
    const timer = timeoutMs > 0 ? clock.setTimeout(() => finish({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` }), timeoutMs) : undefined;
    socket.once('connect', () => finish({ result: 'success', output: '' }));
    socket.once('error', (err) => finish({ result: 'failure', output: goDialError(err, host, opts.port) ?? `dial tcp ${addr}: ${errorText(err)}` }));
  });
}
