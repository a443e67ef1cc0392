#!/usr/bin/env node
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '@kubelet-ts/core';
import { LocalRuntime } from './runtime.js';
import { LOCAL_RUNTIME_VERSION } from './version.js';

const usage = `Usage: local-runtime --socket PATH [--root-dir DIR] [--mode process|simulated] [-v N]

An embedded CRI (runtime.v1) server for kubelet-ts. In process mode containers are host
processes with NO isolation (the image is only recorded); in simulated mode nothing runs.

Options:
  --socket PATH        unix socket to serve on (required); the kubelet's endpoint is unix://PATH
  --root-dir DIR       state, sandbox directories and the image list (default: $TMPDIR/local-runtime)
  --mode MODE          process (default) or simulated
  -v, --v N            log verbosity (default 0)
  --version            print the version
  -h, --help           show this help
`;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Parses the command line; returns the runtime to start, or an exit code. */
export function parseCli(argv: string[], io: CliIo): { runtime: LocalRuntime } | { exitCode: number } {
  let values: { socket?: string; 'root-dir'?: string; mode?: string; v?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        socket: { type: 'string' },
        'root-dir': { type: 'string' },
        mode: { type: 'string' },
        v: { type: 'string', short: 'v' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    io.stderr(`local-runtime: ${(error as Error).message}\n\n${usage}`);
    return { exitCode: 2 };
  }
  if (values.help) {
    io.stdout(usage);
    return { exitCode: 0 };
  }
  if (values.version) {
    io.stdout(`local-runtime ${LOCAL_RUNTIME_VERSION}\n`);
    return { exitCode: 0 };
  }
  if (!values.socket) {
    io.stderr(`local-runtime: --socket is required\n\n${usage}`);
    return { exitCode: 2 };
  }
  const mode = values.mode ?? 'process';
  if (mode !== 'process' && mode !== 'simulated') {
    io.stderr(`local-runtime: --mode must be "process" or "simulated", not ${JSON.stringify(mode)}\n`);
    return { exitCode: 2 };
  }
  const verbosity = values.v === undefined ? 0 : Number(values.v);
  if (!Number.isInteger(verbosity) || verbosity < 0) {
    io.stderr(`local-runtime: -v must be a non-negative integer, not ${JSON.stringify(values.v)}\n`);
    return { exitCode: 2 };
  }
  const logger = createLogger({ verbosity, name: 'local-runtime', sink: (line) => io.stderr(`${line}\n`) });
  const runtime = new LocalRuntime({
    socketPath: values.socket,
    rootDir: values['root-dir'] ?? join(tmpdir(), 'local-runtime'),
    mode,
    logger,
  });
  return { runtime };
}

async function main(): Promise<void> {
  const io: CliIo = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };
  const parsed = parseCli(process.argv.slice(2), io);
  if ('exitCode' in parsed) {
    process.exitCode = parsed.exitCode;
    return;
  }
  const { runtime } = parsed;
  try {
    await runtime.start();
  } catch (error) {
    io.stderr(`local-runtime: ${(error as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  io.stderr(`local-runtime listening on ${runtime.endpoint}\n`);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    io.stderr(`local-runtime: ${signal} received, stopping containers\n`);
    runtime.stop().then(
      () => {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      },
      (error: unknown) => {
        io.stderr(`local-runtime: stop failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

await main();
