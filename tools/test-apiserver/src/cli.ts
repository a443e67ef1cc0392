#!/usr/bin/env node
/**
 * test-apiserver [--port 6443] [--host 127.0.0.1] [--kubeconfig out.yaml] [--token T]
 *                [--bookmark-interval-ms 1000] [--max-history 1000] [--no-enforce-namespaces]
 *                [--service-account-issuer URL] [--api-audiences A,B]
 * Runs the test API server until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startTestApiServer } from './server.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      kubeconfig: { type: 'string' },
      token: { type: 'string' },
      'bookmark-interval-ms': { type: 'string', default: '1000' },
      'max-history': { type: 'string', default: '1000' },
      'no-enforce-namespaces': { type: 'boolean', default: false },
      'service-account-issuer': { type: 'string' },
      'api-audiences': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: test-apiserver [--port N] [--host H] [--kubeconfig PATH] [--token T] [--bookmark-interval-ms MS] [--max-history N] [--no-enforce-namespaces] [--service-account-issuer URL] [--api-audiences A,B]\n',
    );
    return;
  }
  const server = await startTestApiServer({
    port: Number(values.port),
    host: values.host,
    token: values.token,
    bookmarkIntervalMs: Number(values['bookmark-interval-ms']),
    maxHistory: Number(values['max-history']),
    enforceNamespaces: !values['no-enforce-namespaces'],
    serviceAccountTokens: {
      issuer: values['service-account-issuer'],
      apiAudiences: values['api-audiences'] ? values['api-audiences'].split(',').filter(Boolean) : undefined,
    },
  });
  if (values.kubeconfig) await server.writeKubeconfig(values.kubeconfig);
  process.stdout.write(`test-apiserver listening on ${server.url}${values.kubeconfig ? ` (kubeconfig: ${values.kubeconfig})` : ''}\n`);
  const shutdown = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`test-apiserver: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
