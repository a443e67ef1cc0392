import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags, resolveConfig } from '../src/index.js';
import { FEATURE_GATES, GO_KUBELET_1_20_FEATURE_GATES, IMPLEMENTED_FEATURE_GATES, knownFeatureHelp, resolveFeatureGates } from '../src/feature-gates.js';
import { KUBELET_CONFIGURATION_FIELDS, checkKubeletConfigurationFields } from '../src/config-schema.js';

const dir = mkdtempSync(join(tmpdir(), 'kts-config-hardening-'));
let files = 0;
/** A KubeletConfiguration file with these extra lines. */
function configFile(body: string): string {
  const path = join(dir, `config-${files++}.yaml`);
  writeFileSync(path, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}`);
  return path;
}

t.test('unknown KubeletConfiguration fields: a warning naming each one by its path, the rest of the file applies', async (t) => {
  const path = configFile(
    [
      'maxPods: 42',
      'fooBar: 1',
      'authentication:',
      '  x509:',
      '    bogus: x',
      '  anonymous:',
      '    enabled: true',
      'registerWithTaints:',
      '- key: a',
      '  effect: NoSchedule',
      '  colour: red',
      'evictionHard:',
      '  memory.available: 1Gi',
      'logging:',
      '  format: text',
      '  someNewerOption: 1',
      '',
    ].join('\n'),
  );
  const config = resolveConfig(parseFlags([`--config=${path}`]));
  t.equal(config.maxPods, 42, 'known fields still apply');
  t.equal(config.authentication.anonymousEnabled, true);
  t.same(config.eviction.hard, { 'memory.available': '1Gi' }, 'map keys are values, not fields');
  t.equal(config.warnings.length, 1, 'one warning, as the Go kubelet gives one');
  const [warning] = config.warnings;
  t.equal(warning!.msg, 'Using lenient decoding as strict decoding failed');
  t.same(warning!.kv, {
    path,
    err: 'strict decoding error: unknown field "fooBar", unknown field "authentication.x509.bogus", unknown field "registerWithTaints[0].colour"',
  });
  t.same(resolveConfig(parseFlags([`--config=${configFile('maxPods: 3\n')}`])).warnings, [], 'a clean file: no warnings');
});

t.test('a field of the wrong type is an error naming the file and the field', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['maxPods: "abc"\n', /maxPods: must be an integer, got "abc"/],
    ['port: 1.5\n', /port: must be an integer, got 1\.5/],
    ['authentication:\n  anonymous:\n    enabled: "yes"\n', /authentication\.anonymous\.enabled: must be true or false, got "yes"/],
    ['featureGates:\n  EventedPLEG: "on"\n', /featureGates\.EventedPLEG: must be true or false, got "on"/],
    ['tlsCipherSuites: TLS_AES_128_GCM_SHA256\n', /tlsCipherSuites: must be a list of strings, got "TLS_AES_128_GCM_SHA256"/],
    ['syncFrequency: 5\n', /syncFrequency: must be a duration string such as "20s", got 5/],
    ['authorization: Webhook\n', /authorization: must be an object, got "Webhook"/],
    ['registerWithTaints:\n- key: 1\n  effect: NoSchedule\n', /registerWithTaints\[0\]\.key: must be a string, got 1/],
  ];
  for (const [body, message] of cases) {
    const path = configFile(body);
    t.throws(() => resolveConfig(parseFlags([`--config=${path}`])), { name: 'ConfigError', message: new RegExp(`kubelet config file ${path}: .*${message.source}`) }, body.trim());
  }
  t.same(checkKubeletConfigurationFields({ maxPods: null, apiVersion: 'x' }), { unknown: [], typeErrors: [] }, 'null leaves a field at its zero value, as in Go');
});

t.test("every field the config loader reads is one of Go's KubeletConfiguration fields", async (t) => {
  for (const field of ['staticPodPath', 'podLogsDir', 'protectKernelDefaults', 'tlsMinVersion', 'tlsCipherSuites', 'containerRuntimeEndpoint', 'shutdownGracePeriod', 'logging', 'enableSystemLogHandler']) {
    t.ok(field in KUBELET_CONFIGURATION_FIELDS, field);
  }
});

t.test('feature gates: every gate the Go kubelet v1.20 knows is accepted, unknown and locked ones refused with Go\'s text', async (t) => {
  // A beta gate kubelet-ts does not act on: accepted, with a warning that says so.
  const unimplemented = resolveConfig(parseFlags(['--feature-gates=CPUManager=false']));
  t.equal(unimplemented.featureGates.CPUManager, false);
  t.same(unimplemented.warnings.map((w) => w.msg), ['Feature gate CPUManager is known to the Go kubelet v1.20 but not implemented by kubelet-ts: setting it has no effect']);
  t.same(unimplemented.warnings[0]!.kv, { gate: 'CPUManager', value: false, stage: 'BETA', default: true });

  // From the config file too, with the flag winning.
  const path = configFile('featureGates:\n  TopologyManager: true\n  EventedPLEG: true\n');
  const fromFile = resolveConfig(parseFlags([`--config=${path}`, '--feature-gates=EventedPLEG=false']));
  t.equal(fromFile.featureGates.EventedPLEG, false, 'the flag wins over the file');
  t.equal(fromFile.featureGates.TopologyManager, true);
  t.same(fromFile.warnings.map((w) => w.kv?.gate), ['TopologyManager'], 'implemented gates are not warned about');

  // GA and deprecated gates: Go's warnings; a locked gate at its default is fine, the other value is an error.
  t.same(resolveConfig(parseFlags(['--feature-gates=RuntimeClass=true,VolumeSubpath=false,StreamingProxyRedirects=false'])).warnings.map((w) => w.msg), [
    'Setting GA feature gate RuntimeClass=true. It will be removed in a future release.',
    'Setting deprecated feature gate StreamingProxyRedirects=false. It will be removed in a future release.',
    'Setting GA feature gate VolumeSubpath=false. It will be removed in a future release.',
  ]);
  t.throws(() => parseFlags(['--feature-gates=RuntimeClass=false']), {
    name: 'FlagError',
    message: 'invalid argument "RuntimeClass=false" for "--feature-gates" flag: cannot set feature gate RuntimeClass to false, feature is locked to true',
  });
  t.throws(() => resolveConfig(parseFlags([`--config=${configFile('featureGates:\n  NodeLease: false\n')}`])), {
    name: 'ConfigError',
    message: 'featureGates: cannot set feature gate NodeLease to false, feature is locked to true',
  });

  // Unknown gates: Go's "unrecognized feature gate", from the flag and from the file.
  t.throws(() => parseFlags(['--feature-gates=NoSuchGate=true']), { message: /unrecognized feature gate: NoSuchGate$/ });
  t.throws(() => resolveConfig(parseFlags([`--config=${configFile('featureGates:\n  NoSuchGate: true\n')}`])), {
    name: 'ConfigError',
    message: 'featureGates: unrecognized feature gate: NoSuchGate',
  });
  // A gate newer than v1.20 that kubelet-ts does not implement is unknown, as Go v1.20 finds it.
  t.throws(() => parseFlags(['--feature-gates=SidecarContainers=true']), { message: /unrecognized feature gate: SidecarContainers$/ });
});

t.test('feature gates: AllAlpha and AllBeta set the gates not set explicitly; defaults come from kubelet-ts where it is newer', async (t) => {
  const allAlpha = resolveFeatureGates({ AllAlpha: true, KubeletPodResourcesGet: false });
  t.equal(allAlpha.gates.EventedPLEG, true, 'an alpha gate follows AllAlpha');
  t.equal(allAlpha.gates.KubeletPodResourcesGet, false, 'an explicit setting wins');
  t.equal(allAlpha.gates.GracefulNodeShutdown, true, 'beta gates keep their default');
  t.same(allAlpha.warnings, [], 'AllAlpha itself is not warned about');
  const allBeta = resolveFeatureGates({ AllBeta: false });
  t.equal(allBeta.gates.GracefulNodeShutdown, false);
  t.equal(allBeta.gates.KubeletPodResourcesGetAllocatable, false);
  t.equal(allBeta.gates.EventedPLEG, false);

  t.equal(resolveConfig({}).featureGates.GracefulNodeShutdown, true, 'beta and on, as in Go v1.21+ (alpha and off in v1.20)');
  t.same(Object.keys(resolveConfig({}).featureGates).sort(), Object.keys(IMPLEMENTED_FEATURE_GATES).sort(), 'unset gates kubelet-ts does not act on are not listed');
});

t.test("the gate list: Go v1.20's kubelet --help entries, then the GA and deprecated gates", async (t) => {
  // Spot checks against `kubelet --help` of the Go kubelet v1.20.2.
  t.same(GO_KUBELET_1_20_FEATURE_GATES.APIListChunking, { default: true, preRelease: 'BETA' });
  t.same(GO_KUBELET_1_20_FEATURE_GATES.WindowsEndpointSliceProxying, { default: false, preRelease: 'ALPHA' });
  t.same(GO_KUBELET_1_20_FEATURE_GATES.GracefulNodeShutdown, { default: false, preRelease: 'ALPHA' });
  t.same(FEATURE_GATES.GracefulNodeShutdown, { default: true, preRelease: 'BETA' }, 'kubelet-ts implements the newer gate');
  const help = knownFeatureHelp();
  t.equal(help.length, 89 + 3, "Go v1.20's 89 listed gates (AllAlpha and AllBeta among them) and the three newer ones kubelet-ts adds");
  t.same(help.slice(0, 2), ['APIListChunking=true|false (BETA - default=true)', 'APIPriorityAndFairness=true|false (BETA - default=true)']);
  t.same([...help].sort(), help, 'sorted');
  const locked = Object.entries(GO_KUBELET_1_20_FEATURE_GATES).filter(([, spec]) => spec.lockToDefault).map(([name]) => name);
  t.equal(locked.length, 23);
});

t.test("--tls-min-version and --tls-cipher-suites: Go's names, Go's errors and warnings", async (t) => {
  const config = resolveConfig(
    parseFlags(['--tls-min-version=VersionTLS13', '--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_RSA_WITH_RC4_128_SHA']),
  );
  t.equal(config.tlsMinVersion, 'TLSv1.3');
  t.same(config.tlsCipherSuites, ['ECDHE-RSA-AES128-SHA256', 'ECDHE-RSA-CHACHA20-POLY1305'], 'TLS 1.3 suites are not configurable, as in Go; RC4 is not in OpenSSL 3');
  t.same(
    config.warnings.map((w) => w.msg),
    [
      "Use of insecure cipher 'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256' detected.",
      "Use of insecure cipher 'TLS_RSA_WITH_RC4_128_SHA' detected.",
      "Cipher suite TLS_RSA_WITH_RC4_128_SHA is not available in this Node.js's OpenSSL: skipped",
    ],
    "Go's warning for each insecure suite",
  );
  t.throws(() => resolveConfig(parseFlags(['--tls-min-version=VersionTLS99'])), { message: /--tls-min-version: unknown tls version "VersionTLS99"/ });
  t.throws(() => resolveConfig(parseFlags([`--config=${configFile('tlsCipherSuites: [NOPE]\n')}`])), { message: "tlsCipherSuites: Cipher suite NOPE not supported or doesn't exist" });
  t.throws(() => resolveConfig(parseFlags(['--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA'])), { message: /none of the cipher suites TLS_RSA_WITH_RC4_128_SHA is available/ });
  t.same(resolveConfig(parseFlags(['--tls-cipher-suites=TLS_AES_256_GCM_SHA384'])).tlsCipherSuites, [], 'only TLS 1.3 suites: the defaults');
});
