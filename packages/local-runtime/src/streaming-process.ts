import { spawn } from 'node:child_process';
import { exitCodeFor, signalGroup, spawnErrorMessage } from './process.js';
import type { StreamingIO } from './streaming.js';

/** Time to wait for the output pipes to close after the command exited before destroying them. */
const PIPE_CLOSE_GRACE_MS = 2000;

export interface ProcessExecOptions {
  cmd: string[];
  cwd: string;
  env: Record<string, string>;
  io: StreamingIO;
  /** Receives the running command's killer so its owner can kill it on shutdown; returns the unregistration. */
  onSpawn?: (kill: () => void) => () => void;
}

/**
 * Process mode's streaming exec: runs the command in its own process group with the client's stdin piped in and its
 * stdout/stderr streamed out (no terminal: with tty, stderr goes to the client's stdout). The command's group is
 * killed when it exits (as a PID namespace's), when the client goes away, or at shutdown. Resolves with the exit
 * code; rejects, as containerd does, when the command cannot be started.
 */
export function runProcessExec(options: ProcessExecOptions): Promise<number> {
  const { io } = options;
  return new Promise((resolve, reject) => {
    const [command, ...args] = options.cmd;
    const child = spawn(command!, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: [io.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const stdout = io.stdout;
    const stderr = io.stderr ?? (io.tty ? io.stdout : undefined);
    child.stdout?.on('data', (chunk: Buffer) => stdout?.(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr?.(chunk));
    if (io.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      io.stdin.pipe(child.stdin);
    }
    let pipeTimer: NodeJS.Timeout | undefined;
    let exitCode: number | undefined;
    const killGroup = (): void => {
      if (child.pid !== undefined && !signalGroup(child.pid, 'SIGKILL')) child.kill('SIGKILL');
    };
    const unregister = options.onSpawn?.(killGroup);
    io.signal.addEventListener('abort', killGroup, { once: true });
    const cleanup = (): void => {
      if (pipeTimer) clearTimeout(pipeTimer);
      unregister?.();
      io.signal.removeEventListener('abort', killGroup);
      if (io.stdin && child.stdin) io.stdin.unpipe(child.stdin);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      cleanup();
      reject(new Error(`failed to exec in container: failed to start exec: ${spawnErrorMessage(command!, error)}`));
    });
    child.once('exit', (code, signal) => {
      exitCode = exitCodeFor(code, signal);
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      pipeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPE_CLOSE_GRACE_MS);
    });
    child.once('close', (code, signal) => {
      if (exitCode === undefined && child.pid === undefined) return; // spawn failed: the error handler answered
      cleanup();
      resolve(exitCode ?? exitCodeFor(code, signal));
    });
  });
}
