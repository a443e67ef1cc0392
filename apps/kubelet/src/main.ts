#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=30
import 'reflect-metadata';
import { container } from 'tsyringe';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { describePodStatus, startKubelet } from './app.js';
import { ConfigError, resolveConfig } from './config.js';
import { Tokens, registerKubeletDeps } from './container.js';
import { FlagError, HELP_WIDTH, helpText, parseFlags } from './flags.js';
import { KUBELET_VERSION, versionInfo } from './version.js';

/** Resolves once the text is handed to stdout: process.exit right after a write could cut a piped --help short. */
const print = (text: string) => new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));

async function main(argv: string[]): Promise<number> {
  // `kubelet fleet ...`: many kubelets in one process (loaded only when asked for).
  if (argv[0] === 'fleet') return (await import('./fleet/fleet-main.js')).fleetMain(argv.slice(1));
  let flags;
  let config;
  try {
    flags = parseFlags(argv);
    if (flags.help) {
      // Wrapped to the terminal when there is one; piped output keeps a fixed width so it reads the same everywhere.
      await print(helpText(process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : HELP_WIDTH));
      return 0;
    }
    if (flags.version === 'raw') {
      await print(`${JSON.stringify(versionInfo(), null, 2)}\n`);
      return 0;
    }
    if (flags.version) {
      // Go's verflag: "Kubernetes <version>", the same version the node reports as its kubeletVersion.
      await print(`Kubernetes ${KUBELET_VERSION}\n`);
      return 0;
    }
    config = resolveConfig(flags);
  } catch (error) {
    if (error instanceof FlagError || error instanceof ConfigError) {
      console.error(`Error: ${error.message}`);
      if (error instanceof FlagError) console.error(`Run 'kubelet --help' for usage.`);
      return 2;
    }
    throw error;
  }

  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  // Operators see each pod's status as it changes.
  c.register(Tokens.KubeletOptions, {
    useValue: { onPodStatus: (pod: V1Pod, status: V1PodStatus) => process.stdout.write(`${new Date().toISOString()} ${describePodStatus(pod, status)}\n`) },
  });

  const controller = new AbortController();
  const onSignal = (name: string) => {
    if (controller.signal.aborted) {
      process.stderr.write(`received ${name} again, exiting now\n`);
      process.exit(1);
    }
    process.stderr.write(`received ${name}, shutting down\n`);
    controller.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  try {
    const running = await startKubelet(c, controller.signal);
    await running.done;
    return 0;
  } catch (error) {
    console.error(`Error: ${(error as Error).message}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
