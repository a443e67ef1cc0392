import type { StreamingIO } from './streaming.js';

/** What a simulated container offers the commands exec'd in it. */
export interface SimulatedExecContext {
  /** `hostname` prints this (the pod's hostname). */
  hostname: string;
  /** `env` prints these, one `KEY=VALUE` a line, in order. */
  env: [string, string][];
}

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);

/** Splits a `sh -c` script into words: blanks separate, single and double quotes group, a backslash escapes. */
export function splitShellWords(script: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < script.length; i++) {
    const ch = script[i]!;
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === '\\' && quote === '"' && i + 1 < script.length && '"\\$`'.includes(script[i + 1]!)) word += script[++i];
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < script.length) {
      word += script[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

const baseName = (path: string): string => path.slice(path.lastIndexOf('/') + 1);

/**
 * The commands a simulated container "runs" for exec (see the README's "Simulated mode"): `echo [-n] ARGS`, `cat`
 * (stdin to stdout), `hostname`, `env`, `true`, `false`, `exit [N]`, and `sh -c "<one of those>"` (also bash, ash,
 * dash; a command may be named by path, e.g. /bin/echo). Anything else writes
 * `simulated container: <cmd>: command not found` to stderr and exits 127. Resolves with the exit code.
 */
export async function runSimulatedCommand(cmd: string[], context: SimulatedExecContext, io: StreamingIO): Promise<number> {
  const out = (text: string): void => io.stdout?.(Buffer.from(text));
  const err = (text: string): void => (io.stderr ?? io.stdout)?.(Buffer.from(text));
  const [command = '', ...args] = cmd;
  const name = baseName(command);
  if (SHELLS.has(name) && args[0] === '-c' && args.length >= 2) {
    const words = splitShellWords(args[1]!);
    if (words.length === 0) return 0;
    return runSimulatedCommand(words, context, io);
  }
  switch (name) {
    case 'echo': {
      const newline = args[0] !== '-n';
      out(`${(newline ? args : args.slice(1)).join(' ')}${newline ? '\n' : ''}`);
      return 0;
    }
    case 'cat':
      if (args.length > 0) {
        for (const file of args) err(`cat: ${file}: No such file or directory\n`);
        return 1;
      }
      await copyStdin(io);
      return 0;
    case 'hostname':
      out(`${context.hostname}\n`);
      return 0;
    case 'env':
      out(context.env.map(([key, value]) => `${key}=${value}\n`).join(''));
      return 0;
    case 'true':
      return 0;
    case 'false':
      return 1;
    case 'exit': {
      if (args.length === 0) return 0;
      if (!/^\d+$/.test(args[0]!)) {
        err(`simulated container: exit: Illegal number: ${args[0]}\n`);
        return 2;
      }
      return Number(args[0]) % 256;
    }
    default:
      err(`simulated container: ${command}: command not found\n`);
      return 127;
  }
}

/** Copies the client's stdin to stdout until it ends (or the session is aborted); nothing without stdin. */
function copyStdin(io: StreamingIO): Promise<void> {
  const stdin = io.stdin;
  if (!stdin || io.signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      stdin.off('data', onData);
      io.signal.removeEventListener('abort', done);
      resolve();
    };
    const onData = (chunk: Buffer): void => io.stdout?.(chunk);
    stdin.on('data', onData);
    stdin.once('end', done);
    stdin.once('close', done);
    io.signal.addEventListener('abort', done, { once: true });
  });
}
