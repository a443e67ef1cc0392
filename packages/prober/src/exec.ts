// Exec probes (Go: pkg/probe/exec and the runtime's RunInContainer over CRI ExecSync).
import { MAX_PROBE_OUTPUT_BYTES, type ProbeResponse } from './probe.js';
import { errorText } from '@kubelet-ts/core';

export interface ExecSyncOutput {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/**
 * Runs a command in a container: `@kubelet-ts/cri-client`'s RuntimeService fits as it is.
 * `containerId` is the runtime's id (without the `type://` prefix); `timeoutSeconds` 0 means no limit.
 */
export interface ExecRunner {
  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncOutput>;
}

/** True for the error a runtime gives when an exec ran past its timeout (CRI DeadlineExceeded). */
export function isExecTimeout(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, name } = err as { code?: unknown; name?: unknown };
  // cri-client's DeadlineExceededError (code 'DeadlineExceeded'), or a raw gRPC error (code 4).
  return code === 'DeadlineExceeded' || code === 4 || name === 'DeadlineExceededError';
}

/** A CRI error as the Go kubelet prints it (`rpc error: code = Unknown desc = ...`), else its message. */
function runtimeErrorText(err: unknown): string {
  const { code, details } = (err ?? {}) as { code?: unknown; details?: unknown };
  if (typeof code === 'string' && typeof details === 'string') return `rpc error: code = ${code} desc = ${details}`;
  return errorText(err);
}

/**
 * Runs an exec probe (Go: execProber.Probe with the runtime's ExecSync): exit code 0 is success,
 * any other exit code a failure with the command's output (stdout then stderr, at most 10 KiB);
 * a DeadlineExceeded from the runtime is a failure `command "<cmd>" timed out` (Go with
 * ExecProbeTimeout on); any other runtime error (container gone, binary not found in a runtime that
 * reports it as an error) is `unknown` with the error text. Never throws.
 */
export async function execProbe(runner: ExecRunner, containerId: string, cmd: string[], timeoutSeconds: number): Promise<ProbeResponse> {
  let result: ExecSyncOutput;
  try {
    result = await runner.execSync(containerId, cmd, timeoutSeconds);
  } catch (err) {
    if (isExecTimeout(err)) return { result: 'failure', output: `command ${JSON.stringify(cmd.join(' '))} timed out` };
    return { result: 'unknown', output: runtimeErrorText(err) };
  }
  const output = Buffer.concat([result.stdout, result.stderr]).subarray(0, MAX_PROBE_OUTPUT_BYTES).toString('utf8');
  return { result: result.exitCode === 0 ? 'success' : 'failure', output };
}

/**
 * Expands `$(VAR)` in a probe command from the container's literal env values (Go:
 * ExpandContainerCommandOnlyStatic): `$$` is a literal `$`, unknown references stay as written.
 */
export function expandCommand(cmd: string[], env: Array<{ name: string; value?: string }> | undefined): string[] {
  const values = new Map<string, string>();
  for (const e of env ?? []) if (e.value !== undefined) values.set(e.name, e.value);
  return cmd.map((arg) => expandOne(arg, values));
}

function expandOne(input: string, values: Map<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      out += values.has(name) ? values.get(name) : `$(${name})`;
      i = close;
    } else {
      out += '$' + next;
      i++;
    }
  }
  return out;
}
