// `kubelet fleet ...`: parses the fleet's flags and the kubelet flags every node shares, runs the fleet and its
// control API until SIGTERM/SIGINT.
import { container } from 'tsyringe';
import { createLogger } from '@kubelet-ts/core';
import { ConfigError, resolveConfig } from '../config.js';
import { FlagError, parseFlags } from '../flags.js';
import { adjustableLogger } from '../log-verbosity.js';
import { startFleetControlServer } from './control-server.js';
import { Fleet } from './fleet.js';
import { FLEET_HELP, resolveFleetSpec, splitFleetArgs } from './fleet-spec.js';

const print = (text: string) => new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));

export async function fleetMain(argv: string[]): Promise<number> {
  let spec;
  let template;
  try {
    const args = splitFleetArgs(argv);
    if (args.help) {
      await print(FLEET_HELP);
      return 0;
    }
    spec = resolveFleetSpec(args.fleet);
    template = resolveConfig(parseFlags(args.kubelet));
    if (!template.kubeconfig) throw new FlagError('kubelet fleet needs --kubeconfig: its nodes register with an API server');
  } catch (error) {
    if (error instanceof FlagError || error instanceof ConfigError) {
      console.error(`Error: ${error.message}`);
      console.error(`Run 'kubelet fleet --help' for usage.`);
      return 2;
    }
    throw error;
  }
  const logger = adjustableLogger((verbosity) => createLogger({ verbosity, format: template.loggingFormat, name: 'kubelet' }), template.verbosity);
  for (const warning of template.warnings ?? []) logger.warn(warning.msg, warning.kv);
  const fleet = new Fleet({ spec, template, container: container.createChildContainer(), logger });

  const controller = new AbortController();
  const onSignal = (name: string) => {
    if (controller.signal.aborted) {
      process.stderr.write(`received ${name} again, exiting now\n`);
      process.exit(1);
    }
    process.stderr.write(`received ${name}, stopping the fleet\n`);
    controller.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  let control: Awaited<ReturnType<typeof startFleetControlServer>> | undefined;
  try {
    if (spec.controlPort > 0) {
      control = await startFleetControlServer(fleet, spec.controlPort);
      logger.info('Fleet control API listening', { address: `127.0.0.1:${control.port}` });
    }
    const started = Date.now();
    await fleet.start();
    const nodes = fleet.list();
    const running = nodes.filter((node) => node.state === 'running').length;
    await print(`fleet: ${running} nodes started${running < nodes.length ? ` (${nodes.length - running} failed; see the log)` : ''} in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
    if (!controller.signal.aborted) await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    return 0;
  } catch (error) {
    console.error(`Error: ${(error as Error).message}`);
    return 1;
  } finally {
    control?.server.close();
    await fleet.stop();
  }
}
