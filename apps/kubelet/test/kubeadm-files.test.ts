// The files kubeadm v1.20 and its deb packages put on a node (test/fixtures/kubeadm-v1.20, laid out as on the
// node's root): the kubelet is started from them the way systemd does it, with no edits. systemd's part is done here
// as systemd documents it (systemd.service ExecStart=, systemd.exec Environment= and EnvironmentFile=): the drop-in
// resets and replaces the unit's ExecStart, `$VAR` on its own is split on whitespace, `${VAR}` stays one word, a
// leading `-` lets an EnvironmentFile be missing. The only change to the files is a root prefix on the paths
// systemd and the kubelet's flags read, so the test reads the fixture and not the machine's /etc.
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadClientNode } from '@kubelet-ts/core';
import { ConfigError, parseFlags, resolveConfig } from '../src/index.js';
import { CONFIG_FILE_FLAG_DEPRECATION } from '../src/flags.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/kubeadm-v1.20', import.meta.url));

/** systemd's word splitting of a setting's value: whitespace separates, "..." and '...' quote, \ escapes. */
function splitWords(value: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < value.length) word += value[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < value.length) {
      word = (word ?? '') + value[++i];
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unbalanced quotes in ${JSON.stringify(value)}`);
  if (word !== undefined) words.push(word);
  return words;
}

/** A unit file's [Service] settings, in order (comments and other sections left out). */
function serviceSettings(text: string): Array<[string, string]> {
  const settings: Array<[string, string]> = [];
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    const eq = line.indexOf('=');
    if (eq < 0) throw new Error(`not a setting: ${JSON.stringify(line)}`);
    if (section === '[Service]') settings.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()]);
  }
  return settings;
}

/** systemd.exec EnvironmentFile=: KEY=VALUE lines, # and ; comments, a quoted value unquoted. */
function readEnvironmentFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`${path}: not an assignment: ${JSON.stringify(line)}`);
    const words = splitWords(line.slice(eq + 1));
    env[line.slice(0, eq).trim()] = words.join(' ');
  }
  return env;
}

/** What systemd runs for kubelet.service with its drop-ins: the command line after variable expansion. */
function execStart(root: string): { argv: string[]; settings: Map<string, string[]> } {
  const unit = join(root, 'lib/systemd/system/kubelet.service');
  const dropInDir = join(root, 'etc/systemd/system/kubelet.service.d');
  const files = [unit, ...readdirSync(dropInDir).filter((name) => name.endsWith('.conf')).sort().map((name) => join(dropInDir, name))];
  const settings = new Map<string, string[]>();
  const environment: Record<string, string> = {};
  const environmentFiles: string[] = [];
  let exec: string | undefined;
  for (const file of files) {
    for (const [key, value] of serviceSettings(readFileSync(file, 'utf8'))) {
      settings.set(key, [...(settings.get(key) ?? []), value]);
      if (key === 'ExecStart') exec = value === '' ? undefined : value;
      else if (key === 'Environment') {
        for (const assignment of splitWords(value)) {
          const eq = assignment.indexOf('=');
          environment[assignment.slice(0, eq)] = assignment.slice(eq + 1);
        }
      } else if (key === 'EnvironmentFile') environmentFiles.push(value);
    }
  }
  // systemd.exec: the files' variables win over Environment='s; a missing file is an error unless it starts with '-'.
  for (const entry of environmentFiles) {
    const optional = entry.startsWith('-');
    const path = join(root, optional ? entry.slice(1) : entry);
    if (!existsSync(path)) {
      if (optional) continue;
      throw new Error(`EnvironmentFile ${entry} does not exist`);
    }
    Object.assign(environment, readEnvironmentFile(path));
  }
  if (exec === undefined) throw new Error('no ExecStart');
  const argv: string[] = [];
  for (const word of splitWords(exec)) {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
    if (whole) argv.push(...(environment[whole[1]] ?? '').split(/\s+/).filter((part) => part !== ''));
    else argv.push(word.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => environment[name] ?? ''));
  }
  return { argv, settings };
}

/** The fixture copied under a fresh root, the flags' absolute file paths prefixed with it. */
function node(t: { teardown(fn: () => void): void }): { root: string; run: () => { binary: string; args: string[]; settings: Map<string, string[]> } } {
  const root = mkdtempSync(join(tmpdir(), 'kts-kubeadm-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  cpSync(FIXTURE, root, { recursive: true });
  return {
    root,
    run: () => {
      const { argv, settings } = execStart(root);
      const [binary, ...args] = argv;
      return { binary, args: args.map((arg) => arg.replace(/^(--(?:bootstrap-kubeconfig|kubeconfig|config)=)\//, `$1${root}/`)), settings };
    },
  };
}

t.test('the unit and its drop-in run the kubelet with the flags kubeadm passes', async (t) => {
  const { root, run } = node(t);
  const { binary, args, settings } = run();
  t.equal(binary, '/usr/bin/kubelet', "the drop-in's ExecStart replaced the unit's");
  t.same(args, [
    `--bootstrap-kubeconfig=${root}/etc/kubernetes/bootstrap-kubelet.conf`,
    `--kubeconfig=${root}/etc/kubernetes/kubelet.conf`,
    `--config=${root}/var/lib/kubelet/config.yaml`,
    '--container-runtime=remote',
    '--container-runtime-endpoint=unix:///run/containerd/containerd.sock',
    '--node-ip=192.0.2.10',
    '--v=2',
  ]);
  // kubernetes/release's kubelet.service: restarted forever, every 10s; KillMode left at control-group.
  t.same(settings.get('Restart'), ['always']);
  t.same(settings.get('StartLimitInterval'), ['0']);
  t.same(settings.get('RestartSec'), ['10']);
  t.equal(settings.get('KillMode'), undefined, 'the default KillMode (control-group)');
});

t.test("kubeadm's files resolve, unedited, to the configuration Go makes of them", async (t) => {
  const { root, run } = node(t);
  const deprecations: string[] = [];
  const config = resolveConfig(parseFlags(run().args, (message) => deprecations.push(message)), '/');
  t.same(deprecations, [], 'no deprecated flags');
  t.same(config.warnings, [], 'no unknown fields');
  t.equal(config.cgroupDriver, 'systemd');
  t.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
  t.equal(config.imageServiceEndpoint, 'unix:///run/containerd/containerd.sock');
  t.equal(config.kubeconfig, `${root}/etc/kubernetes/kubelet.conf`);
  t.equal(config.bootstrapKubeconfig, `${root}/etc/kubernetes/bootstrap-kubelet.conf`);
  t.equal(config.certDir, '/var/lib/kubelet/pki', '--cert-dir default under the default --root-dir');
  t.equal(config.rootDir, '/var/lib/kubelet');
  t.equal(config.rotateCertificates, true);
  t.equal(config.serverTLSBootstrap, false);
  t.equal(config.staticPodPath, '/etc/kubernetes/manifests');
  t.same(config.clusterDNS, ['10.96.0.10']);
  t.equal(config.clusterDomain, 'cluster.local');
  t.equal(config.resolvConf, '/etc/resolv.conf');
  t.equal(config.healthzBindAddress, '127.0.0.1');
  t.equal(config.healthzPort, 10248);
  t.equal(config.nodeIP, '192.0.2.10');
  t.equal(config.verbosity, 2);
  t.equal(config.loggingFormat, 'text', 'logging: {} is the default logging');
  t.same(config.authentication, { x509ClientCAFile: '/etc/kubernetes/pki/ca.crt', webhookEnabled: true, webhookCacheTTLMs: 120_000, anonymousEnabled: false });
  t.same(config.authorization, { mode: 'Webhook', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 });
  // Every `0s` kubeadm writes is Go's default (SetDefaults_KubeletConfiguration), not zero.
  t.equal(config.syncFrequencyMs, 60_000, 'syncFrequency: 0s');
  t.equal(config.fileCheckFrequencyMs, 20_000, 'fileCheckFrequency: 0s');
  t.equal(config.httpCheckFrequencyMs, 20_000, 'httpCheckFrequency: 0s');
  t.equal(config.runtimeRequestTimeoutMs, 120_000, 'runtimeRequestTimeout: 0s');
  t.equal(config.imageGC.minAgeMs, 120_000, 'imageMinimumGCAge: 0s');
  t.equal(config.nodeStatusUpdateFrequencyMs, 10_000, 'nodeStatusUpdateFrequency: 0s');
  t.equal(config.nodeStatusReportFrequencyMs, 300_000, 'nodeStatusReportFrequency: 0s');
  t.equal(config.eviction.pressureTransitionPeriodMs, 300_000, 'evictionPressureTransitionPeriod: 0s');
  // Go does not default these: zero is off.
  t.equal(config.shutdownGracePeriodMs, 0, 'shutdownGracePeriod: 0s (graceful shutdown off)');
  t.equal(config.shutdownGracePeriodCriticalPodsMs, 0);
  t.equal(config.readOnlyPort, 0);
  // The rest of Go's defaults for a node that joins a cluster.
  t.equal(config.port, 10250);
  t.equal(config.maxPods, 110);
  t.equal(config.cgroupsPerQOS, true);
  t.equal(config.cgroupRoot, '/');
  t.same(config.enforceNodeAllocatable, ['pods']);
  t.equal(config.nodeName.length > 0, true, 'the hostname: kubeadm passes --hostname-override only when the name differs');
});

t.test('the bootstrap kubeconfig is a bootstrap token for the cluster CA kubeadm wrote', async (t) => {
  const { KubeConfig } = await loadClientNode();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(join(FIXTURE, 'etc/kubernetes/bootstrap-kubelet.conf'));
  t.equal(kubeConfig.getCurrentContext(), 'tls-bootstrap-token-user@kubernetes');
  t.equal(kubeConfig.getCurrentUser()?.token, 'abcdef.0123456789abcdef');
  t.match(kubeConfig.getCurrentUser()?.token ?? '', /^[a-z0-9]{6}\.[a-z0-9]{16}$/, "a bootstrap token's form");
  const cluster = kubeConfig.getCurrentCluster();
  t.equal(cluster?.server, 'https://192.0.2.1:6443');
  const ca = new X509Certificate(Buffer.from(cluster?.caData ?? '', 'base64'));
  t.equal(ca.fingerprint256, new X509Certificate(readFileSync(join(FIXTURE, 'etc/kubernetes/pki/ca.crt'))).fingerprint256, 'the same CA as clientCAFile');
  t.equal(ca.ca, true);
});

t.test('what kubeadm 1.20 writes on other nodes parses as Go 1.20 takes it', async (t) => {
  await t.test('systemd-resolved active: --resolv-conf, deprecated, warns as pflag does', async (t) => {
    const { root, run } = node(t);
    writeFileSync(
      join(root, 'var/lib/kubelet/kubeadm-flags.env'),
      'KUBELET_KUBEADM_ARGS="--container-runtime=remote --container-runtime-endpoint=unix:///run/containerd/containerd.sock --resolv-conf=/run/systemd/resolve/resolv.conf"\n',
    );
    const deprecations: string[] = [];
    const config = resolveConfig(parseFlags(run().args, (message) => deprecations.push(message)), '/');
    t.equal(config.resolvConf, '/run/systemd/resolve/resolv.conf');
    t.same(deprecations, [`Flag --resolv-conf has been deprecated, ${CONFIG_FILE_FLAG_DEPRECATION}`]);
    t.same(config.warnings, []);
  });
  await t.test("containerd found by kubeadm's own detection: a bare socket path, accepted with Go's warning", async (t) => {
    const { root, run } = node(t);
    writeFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env'), 'KUBELET_KUBEADM_ARGS="--container-runtime=remote --container-runtime-endpoint=/run/containerd/containerd.sock"\n');
    const config = resolveConfig(parseFlags(run().args), '/');
    t.equal(config.containerRuntimeEndpoint, '/run/containerd/containerd.sock');
    t.same(config.warnings, [
      { msg: 'Using "/run/containerd/containerd.sock" as endpoint is deprecated, please consider using full url format "unix:///run/containerd/containerd.sock".' },
    ]);
  });
  await t.test('a node name other than the hostname, and taints: --hostname-override, --register-with-taints', async (t) => {
    const { root, run } = node(t);
    writeFileSync(
      join(root, 'var/lib/kubelet/kubeadm-flags.env'),
      'KUBELET_KUBEADM_ARGS="--container-runtime=remote --container-runtime-endpoint=unix:///run/containerd/containerd.sock --hostname-override=Worker-1 --register-with-taints=dedicated=infra:NoSchedule"\n',
    );
    const config = resolveConfig(parseFlags(run().args), '/');
    t.equal(config.nodeName, 'worker-1');
    t.equal(config.registerWithTaints, 'dedicated=infra:NoSchedule');
  });
  await t.test('no /etc/default/kubelet: EnvironmentFile=- lets it be missing', async (t) => {
    const { root, run } = node(t);
    rmSync(join(root, 'etc/default/kubelet'));
    const { args } = run();
    t.same(args.slice(-2), ['--container-runtime=remote', '--container-runtime-endpoint=unix:///run/containerd/containerd.sock']);
    t.equal(resolveConfig(parseFlags(args), '/').verbosity, 0);
  });
  await t.test('dockershim (kubeadm with the Docker CRI socket) is refused with the way out', async (t) => {
    const { root, run } = node(t);
    writeFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env'), 'KUBELET_KUBEADM_ARGS="--network-plugin=cni --pod-infra-container-image=k8s.gcr.io/pause:3.2"\n');
    t.throws(() => parseFlags(run().args), { name: 'FlagError', message: 'unknown flag: --network-plugin' });
    t.throws(() => resolveConfig(parseFlags(['--container-runtime=docker'])), { name: 'ConfigError', message: /--container-runtime=docker: kubelet-ts has no dockershim/ });
    t.throws(() => resolveConfig(parseFlags(['--container-runtime=rkt'])), new ConfigError('--container-runtime: unsupported CRI runtime: "rkt"'));
  });
});

t.test("Go's defaulting of a KubeletConfiguration's zero values", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-kubeadm-defaults-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const resolve = (lines: string[], flags: string[] = []) => {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', ...lines, ''].join('\n'));
    return resolveConfig(parseFlags([`--config=${file}`, '--kubeconfig=/k.conf', ...flags], () => {}), dir);
  };
  await t.test('zero ints and empty strings Go defaults', async (t) => {
    const config = resolve(['port: 0', 'maxPods: 0', 'eventBurst: 0', 'kubeAPIBurst: 0', 'address: ""', 'healthzBindAddress: ""', 'cgroupDriver: ""', 'resolvConf: ""', 'containerLogMaxSize: ""', 'podPidsLimit: -5', 'authorization: {mode: ""}']);
    t.equal(config.port, 10250);
    t.equal(config.maxPods, 110);
    t.equal(config.eventBurst, 100);
    t.equal(config.kubeApiBurst, 100);
    t.equal(config.address, '0.0.0.0');
    t.equal(config.healthzBindAddress, '127.0.0.1');
    t.equal(config.cgroupDriver, 'cgroupfs');
    t.equal(config.resolvConf, '/etc/resolv.conf', 'only --resolv-conf= turns it off');
    t.equal(config.containerLogMaxSizeBytes, 10 * 1024 * 1024);
    t.equal(config.podPidsLimit, -1, 'negative is -1');
    t.equal(config.authorization.mode, 'Webhook');
    t.equal(resolve([], ['--resolv-conf=']).resolvConf, '', 'the flag can still turn it off');
  });
  await t.test('pointer fields keep an explicit zero', async (t) => {
    const config = resolve(['healthzPort: 0', 'eventRecordQPS: 0', 'kubeAPIQPS: 0', 'oomScoreAdj: 0', 'imageGCLowThresholdPercent: 0', 'readOnlyPort: 0']);
    t.equal(config.healthzPort, 0);
    t.equal(config.eventQps, 0);
    t.equal(config.kubeApiQps, 0);
    t.equal(config.oomScoreAdj, 0);
    t.equal(config.imageGC.lowThresholdPercent, 0);
    t.equal(config.readOnlyPort, 0);
  });
  await t.test('nodeStatusReportFrequency follows an explicit nodeStatusUpdateFrequency, as in Go', async (t) => {
    t.equal(resolve(['nodeStatusUpdateFrequency: 20s']).nodeStatusReportFrequencyMs, 20_000, 'unset report frequency');
    t.equal(resolve(['nodeStatusUpdateFrequency: 20s', 'nodeStatusReportFrequency: 0s']).nodeStatusReportFrequencyMs, 20_000, '0s report frequency');
    t.equal(resolve(['nodeStatusUpdateFrequency: 20s', 'nodeStatusReportFrequency: 1m']).nodeStatusReportFrequencyMs, 60_000, 'its own value wins');
    t.equal(resolve(['nodeStatusUpdateFrequency: 0s']).nodeStatusReportFrequencyMs, 300_000, 'a 0s update frequency is unset: 5m');
    t.equal(resolve([], ['--node-status-update-frequency=20s']).nodeStatusReportFrequencyMs, 300_000, 'the flag comes after defaulting: not followed');
  });
  await t.test('a zero duration given as a flag is still zero (flags come after defaulting)', async (t) => {
    t.throws(() => resolve([], ['--sync-frequency=0s']), /syncFrequency: must be greater than zero/);
  });
});

t.test('deprecated flags work and warn as pflag does; the others do not warn', async (t) => {
  const deprecations: string[] = [];
  const flags = parseFlags(['--register-schedulable=false', '--kubeconfig=/k', '--container-runtime=remote', '--sync-frequency=30s'], (message) => deprecations.push(message));
  t.equal(flags.registerSchedulable, false);
  t.equal(flags.syncFrequencyMs, 30_000);
  t.same(deprecations, ['Flag --register-schedulable has been deprecated, will be removed in a future version', `Flag --sync-frequency has been deprecated, ${CONFIG_FILE_FLAG_DEPRECATION}`]);
});
