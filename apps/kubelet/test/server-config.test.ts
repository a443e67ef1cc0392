import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PodStatus } from '@kubernetes/client-node';
import { parseFlags, resolveConfig, validateContainerLogStatus } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'server-config-'));
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
const resolve = (...args: string[]) => resolveConfig(parseFlags(['--hostname-override=n1', `--root-dir=${dir}/root`, ...args]));

t.test('server defaults: secure with an API server, nothing to authenticate with standalone', async (t) => {
  const standalone = resolve();
  t.equal(standalone.port, 10250);
  t.equal(standalone.address, '0.0.0.0');
  t.equal(standalone.readOnlyPort, 0, 'the read-only port is off unless asked for');
  t.same(standalone.authentication, { x509ClientCAFile: undefined, webhookEnabled: false, webhookCacheTTLMs: 120_000, anonymousEnabled: false });
  t.same(standalone.authorization, { mode: 'AlwaysAllow', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 });
  t.equal(standalone.certDir, join(dir, 'root', 'pki'));
  t.equal(standalone.containerLogMaxSizeBytes, 10 * 1024 * 1024);
  t.equal(standalone.containerLogMaxFiles, 5);

  const withApi = resolve(`--kubeconfig=${kubeconfig}`);
  t.equal(withApi.authentication.webhookEnabled, true, 'KubeletConfiguration default: token webhook on');
  t.equal(withApi.authentication.anonymousEnabled, false);
  t.equal(withApi.authorization.mode, 'Webhook');
});

t.test('server flags', async (t) => {
  const config = resolve(
    `--kubeconfig=${kubeconfig}`,
    '--address=127.0.0.1',
    '--port=11250',
    '--read-only-port=11255',
    '--client-ca-file=/etc/ca.crt',
    '--anonymous-auth=true',
    '--authentication-token-webhook=false',
    '--authentication-token-webhook-cache-ttl=10s',
    '--authorization-mode=AlwaysAllow',
    '--authorization-webhook-cache-authorized-ttl=1m',
    '--authorization-webhook-cache-unauthorized-ttl=5s',
    '--tls-min-version=VersionTLS13',
    '--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
    '--tls-cert-file=/etc/kubelet.crt',
    '--tls-private-key-file=/etc/kubelet.key',
    '--container-log-max-size=1Mi',
    '--container-log-max-files=2',
    '--enable-debugging-handlers=false',
  );
  t.equal(config.address, '127.0.0.1');
  t.equal(config.port, 11250);
  t.equal(config.readOnlyPort, 11255);
  t.same(config.authentication, { x509ClientCAFile: '/etc/ca.crt', webhookEnabled: false, webhookCacheTTLMs: 10_000, anonymousEnabled: true });
  t.same(config.authorization, { mode: 'AlwaysAllow', cacheAuthorizedTTLMs: 60_000, cacheUnauthorizedTTLMs: 5_000 });
  t.equal(config.tlsMinVersion, 'TLSv1.3');
  t.same(config.tlsCipherSuites, ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384']);
  t.equal(config.tlsCertFile, '/etc/kubelet.crt');
  t.equal(config.containerLogMaxSizeBytes, 1024 * 1024);
  t.equal(config.containerLogMaxFiles, 2);
  t.equal(config.enableDebuggingHandlers, false);
});

t.test('the KubeletConfiguration file: authentication, authorization and log rotation fields', async (t) => {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'readOnlyPort: 10255',
      'authentication:',
      '  anonymous: { enabled: true }',
      '  webhook: { enabled: true, cacheTTL: 30s }',
      '  x509: { clientCAFile: /pki/ca.crt }',
      'authorization:',
      '  mode: Webhook',
      '  webhook: { cacheAuthorizedTTL: 2m, cacheUnauthorizedTTL: 10s }',
      'containerLogMaxSize: 5Mi',
      'containerLogMaxFiles: 3',
      'tlsMinVersion: VersionTLS12',
    ].join('\n'),
  );
  const config = resolve(`--config=${file}`, `--kubeconfig=${kubeconfig}`);
  t.equal(config.readOnlyPort, 10255);
  t.same(config.authentication, { x509ClientCAFile: '/pki/ca.crt', webhookEnabled: true, webhookCacheTTLMs: 30_000, anonymousEnabled: true });
  t.same(config.authorization, { mode: 'Webhook', cacheAuthorizedTTLMs: 120_000, cacheUnauthorizedTTLMs: 10_000 });
  t.equal(config.containerLogMaxSizeBytes, 5 * 1024 * 1024);
  t.equal(config.containerLogMaxFiles, 3);
  t.equal(config.tlsMinVersion, 'TLSv1.2');
});

t.test('bad server configuration names what is wrong', async (t) => {
  t.throws(() => resolve('--authorization-mode=Webhook'), /authorization.mode: no API server \(--kubeconfig\)/);
  t.throws(() => resolve('--authentication-token-webhook'), /authentication.webhook.enabled: no API server/);
  t.throws(() => resolve(`--kubeconfig=${kubeconfig}`, '--authorization-mode=RBAC'), /authorization.mode: invalid value "RBAC": must be AlwaysAllow or Webhook/);
  t.throws(() => resolve('--tls-min-version=TLS1.2'), /--tls-min-version: unknown tls version "TLS1.2"/);
  t.throws(() => resolve('--tls-cipher-suites=TLS_NOPE'), /--tls-cipher-suites: Cipher suite TLS_NOPE not supported or doesn't exist/);
  t.throws(() => resolve('--container-log-max-files=1'), /containerLogMaxFiles: Invalid value: 1: must be greater than 1/);
  t.throws(() => resolve('--container-log-max-size=lots'), /containerLogMaxSize: Invalid value: "lots"/);
  t.throws(() => parseFlags(['--read-only-port=70000']), /port must be between 0 and 65535/);
});

t.test('validateContainerLogStatus: which container a log request reads, with Go\'s messages', async (t) => {
  const status = (container: Record<string, unknown>): V1PodStatus => ({ containerStatuses: [{ name: 'app', image: 'i', imageID: '', ready: false, restartCount: 0, ...container }] });
  t.equal(validateContainerLogStatus('web', status({ containerID: 'containerd://c2', state: { running: { startedAt: new Date() } } }), 'app', false), 'c2');
  t.equal(
    validateContainerLogStatus('web', status({ containerID: 'containerd://c2', state: { running: {} }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://c1' } } }), 'app', true),
    'c1',
    'previous: the last terminated instance',
  );
  t.throws(() => validateContainerLogStatus('web', status({ state: { running: {} } }), 'app', true), /previous terminated container "app" in pod "web" not found/);
  t.equal(validateContainerLogStatus('web', status({ state: { terminated: { exitCode: 0, containerID: 'containerd://c3' } } }), 'app', false), 'c3');
  t.equal(
    validateContainerLogStatus('web', status({ state: { terminated: { exitCode: 0 } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://c1' } } }), 'app', false),
    'c1',
    'a terminated container that never started: the last one',
  );
  t.throws(() => validateContainerLogStatus('web', status({ state: { terminated: { exitCode: 0 } } }), 'app', false), /container "app" in pod "web" is terminated/);
  t.throws(() => validateContainerLogStatus('web', status({ state: { waiting: { reason: 'ErrImagePull' } } }), 'app', false), /is waiting to start: image can't be pulled/);
  t.throws(() => validateContainerLogStatus('web', status({ state: { waiting: { reason: 'ImagePullBackOff' } } }), 'app', false), /trying and failing to pull image/);
  t.throws(() => validateContainerLogStatus('web', status({ state: { waiting: { reason: 'ContainerCreating' } } }), 'app', false), /container "app" in pod "web" is waiting to start: ContainerCreating/);
  t.throws(() => validateContainerLogStatus('web', status({ state: {} }), 'app', false), /is waiting to start - no logs yet/);
  t.throws(() => validateContainerLogStatus('web', status({}), 'other', false), /container "other" in pod "web" is not available/);
});
