import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import type { LineSplitter } from './log-writer.js';
import { liveGroupMembers } from './procfs.js';

/** How a process ended. */
export interface ProcessExit {
  /** The exit code as a container runtime reports it: the code, or 128 + signal number. */
  exitCode: number;
  /** The signal that killed the process, if any. */
  signal: NodeJS.Signals | null;
}

/** 128 + the signal's number, as shells and container runtimes report a death by signal. */
export function exitCodeFor(code: number | null, signal: NodeJS.Signals | null): number {
  if (signal) return 128 + (osConstants.signals[signal] ?? 0);
  return code ?? 255;
}

/** Sends a signal to a whole process group; true when the group existed. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks), to recognise a pid after a restart; undefined off Linux. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

export interface StartProcessOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Where stdout/stderr go; absent: the output is drained and dropped. */
  stdout?: LineSplitter;
  stderr?: LineSplitter;
}

/** Receives a container process's output (attach). */
export type OutputListener = (stream: 'stdout' | 'stderr', chunk: Buffer) => void;

/** Time to wait for the output pipes to close after the process exited before destroying them. */
const PIPE_CLOSE_GRACE_MS = 2000;

/**
 * A host process in its own process group (spawned detached), standing in for a container's init
 * process. When the leader exits the rest of its group is killed, like the processes of a PID
 * namespace when its init dies, so that nothing the container started outlives it.
 */
export class HostProcess {
  readonly pid: number;
  /** Resolves once the process exited and its output pipes are drained. Never rejects. */
  readonly exited: Promise<ProcessExit>;
  private done = false;
  private readonly listeners = new Set<OutputListener>();

  private constructor(private readonly child: ChildProcess) {
    this.pid = child.pid as number;
    this.exited = new Promise<ProcessExit>((resolve) => {
      let exit: ProcessExit | undefined;
      let pipeTimer: NodeJS.Timeout | undefined;
      child.once('exit', (code, signal) => {
        exit = { exitCode: exitCodeFor(code, signal), signal };
        signalGroup(this.pid, 'SIGKILL');
        // A process that left the group (setsid) may keep the pipes open: do not wait for it forever.
        pipeTimer = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        }, PIPE_CLOSE_GRACE_MS);
      });
      child.once('close', (code, signal) => {
        if (pipeTimer) clearTimeout(pipeTimer);
        const result = exit ?? { exitCode: exitCodeFor(code, signal), signal };
        void waitGroupGone(this.pid).then(() => {
          this.done = true;
          resolve(result);
        });
      });
    });
  }

  /** Spawns the process; rejects with a runtime-like message when it cannot be started. */
  static start(options: StartProcessOptions): Promise<HostProcess> {
    return new Promise((resolve, reject) => {
      const child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const onError = (error: NodeJS.ErrnoException): void => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        reject(new Error(spawnErrorMessage(options.command, error)));
      };
      child.once('error', onError);
      child.once('spawn', () => {
        child.off('error', onError);
        child.on('error', () => undefined);
        const proc = new HostProcess(child);
        pipe(child.stdout, options.stdout, (chunk) => proc.tell('stdout', chunk));
        pipe(child.stderr, options.stderr, (chunk) => proc.tell('stderr', chunk));
        resolve(proc);
      });
    });
  }

  /**
   * Also sends the process's output from now on to `listener` (an attach); returns the unsubscription. Ends with
   * the process's output.
   */
  onOutput(listener: OutputListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** @internal */
  tell(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    for (const listener of this.listeners) listener(stream, chunk);
  }

  get running(): boolean {
    return !this.done;
  }

  /** Signals the whole group (falls back to the leader alone). */
  signal(signal: NodeJS.Signals): void {
    if (this.done) return;
    if (!signalGroup(this.pid, signal)) {
      try {
        this.child.kill(signal);
      } catch {
        // already gone
      }
    }
  }
}

/**
 * Waits (briefly) until no process of the group is left, killed members included: they linger as
 * zombies until their new parent reaps them, and a caller told "exited" may check for them.
 */
async function waitGroupGone(pgid: number, limitMs = 1000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    if (liveGroupMembers(pgid)?.length === 0) return;
    signalGroup(pgid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function pipe(source: NodeJS.ReadableStream | null, splitter: LineSplitter | undefined, tee: (chunk: Buffer) => void): void {
  if (!source) return;
  source.on('data', (chunk: Buffer) => {
    splitter?.push(chunk);
    tee(chunk);
  });
  source.on('end', () => splitter?.end());
  source.on('error', () => splitter?.end());
}

/** The message a container runtime would give for a binary it cannot execute. */
export function spawnErrorMessage(command: string, error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ENOENT':
      return `exec: ${JSON.stringify(command)}: executable file not found in $PATH (or working directory missing)`;
    case 'EACCES':
      return `exec: ${JSON.stringify(command)}: permission denied`;
    default:
      return `exec: ${JSON.stringify(command)}: ${error.message}`;
  }
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
  timedOut: boolean;
}

export interface ExecOptions {
  cmd: string[];
  cwd: string;
  env: Record<string, string>;
  /** 0 = no limit. */
  timeoutMs: number;
  /** The timer for the timeout (the runtime's clock). */
  setTimer: (fn: () => void, ms: number) => { cancel(): void };
  /** Bytes kept of each of stdout and stderr; the rest is dropped. */
  maxOutputBytes: number;
  /** Receives the running process so its owner can kill it on shutdown. */
  onSpawn?: (kill: () => void) => () => void;
}

/**
 * Runs a command to completion in its own process group, capturing capped output. A binary that
 * cannot be executed gives exit code 127 (126 when not executable) and the reason on stderr, as a shell
 * would, so probes report a clear failure.
 */
export function execCommand(options: ExecOptions): Promise<ExecResult> {
  return new Promise((resolve) => {
    const [command, ...args] = options.cmd;
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout = new CappedBuffer(options.maxOutputBytes);
    const stderr = new CappedBuffer(options.maxOutputBytes);
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    let timer: { cancel(): void } | undefined;
    let pipeTimer: NodeJS.Timeout | undefined;
    let exitCode: number | undefined;
    const killGroup = (): void => {
      if (child.pid !== undefined && !signalGroup(child.pid, 'SIGKILL')) child.kill('SIGKILL');
    };
    const unregister = options.onSpawn?.(killGroup);
    const finish = (result: ExecResult): void => {
      timer?.cancel();
      if (pipeTimer) clearTimeout(pipeTimer);
      unregister?.();
      resolve(result);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      const code = error.code === 'EACCES' ? 126 : 127;
      finish({
        stdout: Buffer.alloc(0),
        stderr: Buffer.from(`${spawnErrorMessage(command, error)}\n`),
        exitCode: code,
        timedOut: false,
      });
    });
    child.once('exit', (code, signal) => {
      exitCode = exitCodeFor(code, signal);
      // Like a PID namespace: what the command left behind dies with it.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      pipeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPE_CLOSE_GRACE_MS);
    });
    child.once('close', (code, signal) => {
      finish({
        stdout: stdout.value(),
        stderr: stderr.value(),
        exitCode: exitCode ?? exitCodeFor(code, signal),
        timedOut,
      });
    });
    if (options.timeoutMs > 0) {
      timer = options.setTimer(() => {
        timedOut = true;
        killGroup();
      }, options.timeoutMs);
    }
  });
}

class CappedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    if (this.size >= this.max) return;
    const room = this.max - this.size;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  value(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}
