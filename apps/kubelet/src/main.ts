#!/usr/bin/env node
import 'reflect-metadata';
import { container } from 'tsyringe';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { describePodStatus, startKubelet } from './app.js';
import { ConfigError, resolveConfig } from './config.js';
import { Tokens, registerKubeletDeps } from './container.js';
import { FlagError, parseFlags, usage } from './flags.js';
import { KUBELET_VERSION } from './version.js';

async function main(argv: string[]): Promise<number> {
  let flags;
  let config;
  try {
    flags = parseFlags(argv);
    if (flags.help) {
      console.log(`The kubelet is the primary node agent: it runs the pods described by static manifests\n(and, later, the API server) on a CRI runtime.\n\n${usage()}`);
      return 0;
    }
    if (flags.version) {
      console.log(`Kubernetes ${KUBELET_VERSION} (kubelet-ts)`);
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
