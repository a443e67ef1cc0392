// gRPC health probes (Go: pkg/probe/grpc): grpc.health.v1.Health/Check over @grpc/grpc-js.
import { createRequire } from 'node:module';
import type * as grpc from '@grpc/grpc-js';
import { DEFAULT_PROBE_USER_AGENT, joinHostPort, type ProbeResponse } from './probe.js';
import { errorText, formatDuration } from '@kubelet-ts/core';

export interface GrpcProbeOptions {
  host: string;
  port: number;
  /** The service name sent in HealthCheckRequest; default '' (the server's overall health). */
  service?: string;
  /** Connecting and the call together must finish within this. Default 1. */
  timeoutSeconds?: number;
  userAgent?: string;
}

/** grpc.health.v1.HealthCheckResponse.ServingStatus names by number. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** The gRPC status code names as Go prints them (`rpc error: code = NotFound desc = ...`). */
const CODE_NAMES = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable',
  'DataLoss', 'Unauthenticated',
];

// The two messages are tiny, so they are encoded by hand instead of loading a .proto at run time.
function encodeRequest(req: { service: string }): Buffer {
  const service = Buffer.from(req.service, 'utf8');
  if (service.length === 0) return Buffer.alloc(0); // proto3 omits default values
  return Buffer.concat([Buffer.from([0x0a]), encodeVarint(service.length), service]);
}

function decodeRequest(buf: Buffer): { service: string } {
  let service = '';
  forEachField(buf, (field, wire, value) => {
    if (field === 1 && wire === 2) service = (value as Buffer).toString('utf8');
  });
  return { service };
}

function encodeResponse(res: { status: number }): Buffer {
  return res.status === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x08]), encodeVarint(res.status)]);
}

function decodeResponse(buf: Buffer): { status: number } {
  let status = 0;
  forEachField(buf, (field, wire, value) => {
    if (field === 1 && wire === 0) status = value as number;
  });
  return { status };
}

function encodeVarint(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  while (v > 0x7f) {
    bytes.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

function readVarint(buf: Buffer, pos: number): [number, number] {
  let result = 0;
  let mul = 1;
  for (let i = pos; i < buf.length; i++) {
    const b = buf[i];
    result += (b & 0x7f) * mul;
    mul *= 128;
    if ((b & 0x80) === 0) return [result, i + 1];
  }
  throw new Error('truncated varint');
}

/** Walks protobuf fields: wire types 0 (varint), 1 (64-bit), 2 (bytes), 5 (32-bit). */
function forEachField(buf: Buffer, fn: (field: number, wire: number, value: number | Buffer) => void): void {
  let pos = 0;
  while (pos < buf.length) {
    const [key, afterKey] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    pos = afterKey;
    if (wire === 0) {
      const [value, next] = readVarint(buf, pos);
      fn(field, wire, value);
      pos = next;
    } else if (wire === 2) {
      const [len, next] = readVarint(buf, pos);
      fn(field, wire, buf.subarray(next, next + len));
      pos = next + len;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`unsupported protobuf wire type ${wire}`);
  }
}

/** The grpc.health.v1.Health service (Check only), usable with grpc-js clients and servers. */
export const healthCheckService = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeRequest,
    requestDeserialize: decodeRequest,
    responseSerialize: encodeResponse,
    responseDeserialize: decodeResponse,
  },
} satisfies grpc.ServiceDefinition;

// grpc-js is loaded by the first gRPC probe, not with the package (most pods have none). The prober has its own
// loader rather than cri-client's: a probe library user should not have to install the CRI client.
let grpcModule: typeof grpc | undefined;
let healthClient: grpc.ServiceClientConstructor | undefined;
function grpcJs(): typeof grpc {
  grpcModule ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof grpc;
  return grpcModule;
}

interface HealthClientShape extends grpc.Client {
  Check(req: { service: string }, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: number }) => void): grpc.ClientUnaryCall;
}

/**
 * Calls grpc.health.v1.Health/Check with Go's semantics: SERVING is success (`service healthy`);
 * any other status fails with `service unhealthy (responded with "NOT_SERVING")`; a server that
 * cannot be reached within the timeout fails with `timeout: failed to connect service "<addr>"
 * within 1s: context deadline exceeded` (Go dials with WithBlock, so a closed port also waits for
 * the timeout); an UNIMPLEMENTED, a deadline or other RPC errors fail with Go's texts. Plaintext only,
 * as in Go. Never throws.
 */
export async function grpcProbe(opts: GrpcProbeOptions): Promise<ProbeResponse> {
  const timeoutSeconds = opts.timeoutSeconds ?? 1;
  const addr = joinHostPort(opts.host.replace(/^\[|\]$/g, ''), opts.port);
  const service = opts.service ?? '';
  let client: HealthClientShape;
  try {
    healthClient ??= grpcJs().makeGenericClientConstructor(healthCheckService, 'Health');
    client = new healthClient(addr, grpcJs().credentials.createInsecure(), {
      'grpc.primary_user_agent': opts.userAgent ?? DEFAULT_PROBE_USER_AGENT,
      'grpc.enable_retries': 0,
      'grpc.service_config_disable_resolution': 1,
      // A probe's channel is used once; do not let it share a subchannel with other probes.
      'grpc.use_local_subchannel_pool': 1,
    }) as unknown as HealthClientShape;
  } catch (err) {
    return { result: 'failure', output: `error: failed to connect service at ${JSON.stringify(addr)}: ${errorText(err)}` };
  }
  const deadline = new Date(Date.now() + timeoutSeconds * 1000);
  try {
    const connectError = await new Promise<Error | undefined>((resolve) => client.waitForReady(deadline, (err) => resolve(err)));
    if (connectError) {
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${formatDuration(Math.round(timeoutSeconds * 1000))}: context deadline exceeded`,
      };
    }
    const response = await new Promise<{ err: grpc.ServiceError | null; res?: { status: number } }>((resolve) => {
      client.Check({ service }, { deadline }, (err, res) => resolve({ err, res }));
    });
    if (response.err) {
      const err = response.err;
      if (err.code === grpcJs().status.UNIMPLEMENTED) {
        return { result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${err.details}` };
      }
      if (err.code === grpcJs().status.DEADLINE_EXCEEDED) {
        return { result: 'failure', output: `timeout: health rpc did not complete within ${formatDuration(Math.round(timeoutSeconds * 1000))}` };
      }
      const code = CODE_NAMES[err.code] ?? `Code(${err.code})`;
      return { result: 'failure', output: `error: health rpc probe failed: rpc error: code = ${code} desc = ${err.details}` };
    }
    const status = response.res?.status ?? 0;
    if (status !== 1) {
      return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(SERVING_STATUS[status] ?? String(status))})` };
    }
    return { result: 'success', output: 'service healthy' };
  } catch (err) {
    return { result: 'failure', output: `error: health rpc probe failed: ${errorText(err)}` };
  } finally {
    client.close();
  }
}
