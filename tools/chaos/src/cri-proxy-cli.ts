// The CRI chaos proxy by hand: `tsx src/cri-proxy-cli.ts --listen /tmp/p.sock --upstream unix:///run/containerd/containerd.sock
// [--delay 200ms] [--jitter 100ms] [--drop 0.1] [--hang] [--methods RunPodSandbox,ListContainers]`, then start a
// kubelet with `--container-runtime-endpoint=unix:///tmp/p.sock`. SIGINT/SIGTERM print the stats and stop it.
import { CriChaosProxy, parseCriProxyArgs, type CriProxyCliOptions } from './cri-proxy.js';

async function main(): Promise<void> {
  let options: CriProxyCliOptions;
  try {
    options = parseCriProxyArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  const proxy = await CriChaosProxy.start({ socketPath: options.listen, upstream: options.upstream });
  proxy.setFault(options.fault);
  process.stdout.write(`CRI chaos proxy listening on ${proxy.endpoint}, relaying to ${options.upstream}, fault ${JSON.stringify(options.fault ?? null)}\n`);
  const stop = (): void => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.stdout.write(`CRI chaos proxy stats ${JSON.stringify(proxy.stats())}\n`);
    void proxy.close();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
});
