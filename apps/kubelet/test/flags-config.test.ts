import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlagError, LOCAL_RUNTIME_ENDPOINT, parseFlags, parseManifestUrlHeaders, resolveConfig, usage } from '../src/index.js';

t.test('parses the Go kubelet flag names and forms', async (t) => {
  const flags = parseFlags([
    '--pod-manifest-path=/etc/kubernetes/manifests',
    '--container-runtime-endpoint', 'unix:///run/containerd/containerd.sock',
    '--hostname-override=Node-A',
    '--sync-frequency=30s',
    '--file-check-frequency', '1m30s',
    '--http-check-frequency=5s',
    '--manifest-url=http://example.invalid/pods',
    '--manifest-url-header=a:b,c:d',
    '--manifest-url-header', 'a:e',
    '--runonce',
    '--healthz-port=0',
    '-v=4',
  ]);
  t.equal(flags.podManifestPath, '/etc/kubernetes/manifests');
  t.equal(flags.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
  t.equal(flags.syncFrequencyMs, 30_000);
  t.equal(flags.fileCheckFrequencyMs, 90_000);
  t.equal(flags.httpCheckFrequencyMs, 5000);
  t.same(flags.manifestUrlHeader, ['a:b', 'c:d', 'a:e']);
  t.equal(flags.runonce, true);
  t.equal(flags.healthzPort, 0);
  t.equal(flags.verbosity, 4);
  t.equal(parseFlags(['--v', '2']).verbosity, 2);
  t.equal(parseFlags(['--runonce=false']).runonce, false);
});

t.test('bad flags get clear errors', async (t) => {
  t.throws(() => parseFlags(['--no-such-flag=1']), { name: 'FlagError', message: 'unknown flag: --no-such-flag' });
  t.throws(() => parseFlags(['--sync-frequency=soon']), /invalid argument "soon" for "--sync-frequency" flag: time: invalid duration "soon"/);
  t.throws(() => parseFlags(['--healthz-port=70000']), /port must be between 0 and 65535/);
  t.throws(() => parseFlags(['--root-dir']), /flag needs an argument: --root-dir/);
  t.throws(() => parseFlags(['stray']), FlagError);
  t.throws(() => parseFlags(['--runonce=maybe']), /not a boolean/);
  t.match(usage(), /--pod-manifest-path string/);
});

t.test('config file, then flags over it, then Go defaults', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-config-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'staticPodPath: manifests',
      'syncFrequency: 10s',
      'fileCheckFrequency: 5s',
      'healthzPort: 12345',
      'staticPodURLHeader:',
      '  X-Token: ["abc"]',
      'logging:',
      '  verbosity: 3',
    ].join('\n'),
  );
  const config = resolveConfig(parseFlags([`--config=${file}`, '--sync-frequency=20s', '--hostname-override=Worker-1']), dir);
  t.equal(config.staticPodPath, join(dir, 'manifests'), 'relative paths resolve against the working directory');
  t.equal(config.syncFrequencyMs, 20_000, 'flags win over the file');
  t.equal(config.fileCheckFrequencyMs, 5000, 'the file wins over defaults');
  t.equal(config.httpCheckFrequencyMs, 20_000, 'Go default');
  t.equal(config.healthzPort, 12345);
  t.same(config.staticPodURLHeader, { 'X-Token': ['abc'] });
  t.equal(config.verbosity, 3);
  t.equal(config.nodeName, 'worker-1', 'node names are lower-cased as Go does');
  t.equal(config.containerRuntimeEndpoint, LOCAL_RUNTIME_ENDPOINT);
  t.equal(config.rootDir, '/var/lib/kubelet');
  t.equal(config.podLogsDir, '/var/log/pods');
  t.equal(config.runtimeRequestTimeoutMs, 120_000);
  t.equal(config.maxPods, 110);
});

t.test('config file errors name the file and the field', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-config-'));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const kind = write('kind.yaml', 'apiVersion: v1\nkind: Pod\n');
  t.throws(() => resolveConfig({ config: kind }), new RegExp(`kubelet config file ${kind}: kind is "Pod", expected "KubeletConfiguration"`));
  const duration = write('dur.yaml', 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: often\n');
  t.throws(() => resolveConfig({ config: duration }), /syncFrequency: time: invalid duration "often"/);
  const yaml = write('bad.yaml', 'apiVersion: [unclosed');
  t.throws(() => resolveConfig({ config: yaml }), /failed to decode kubelet config file/);
  t.throws(() => resolveConfig({ config: join(dir, 'missing.yaml') }), /failed to load kubelet config file/);
});

t.test('manifest URL headers need exactly one separator', async (t) => {
  t.same(parseManifestUrlHeaders(['a:b', 'a:c', 'X:y']), { a: ['b', 'c'], X: ['y'] });
  t.throws(() => parseManifestUrlHeaders(['a:b:c']), /manifest-url-header must have a single ':' key-value separator, got "a:b:c"/);
  t.throws(() => parseManifestUrlHeaders(['novalue']), /single ':'/);
});

t.test('feature gates as in the Go kubelet', async (t) => {
  t.same(parseFlags(['--feature-gates=EventedPLEG=true']).featureGates, { EventedPLEG: true });
  t.equal(resolveConfig(parseFlags(['--feature-gates', 'EventedPLEG=true'])).featureGates.EventedPLEG, true);
  t.equal(resolveConfig({}).featureGates.EventedPLEG, false, 'off by default');
  t.throws(() => parseFlags(['--feature-gates=NoSuchGate=true']), /unrecognized feature gate: NoSuchGate/);
  t.throws(() => parseFlags(['--feature-gates=EventedPLEG=yes']), /invalid value of EventedPLEG=yes/);
});

t.test('garbage collection flags and their validation', async (t) => {
  const config = resolveConfig(
    parseFlags([
      '--image-gc-high-threshold=90',
      '--image-gc-low-threshold=70',
      '--minimum-image-ttl-duration=5m',
      '--minimum-container-ttl-duration=30s',
      '--maximum-dead-containers-per-container=2',
      '--maximum-dead-containers=100',
      '--pod-infra-container-image=localhost/kubelet-ts/pause:3.9',
    ]),
  );
  t.same(config.imageGC, { highThresholdPercent: 90, lowThresholdPercent: 70, minAgeMs: 300_000, maxAgeMs: 0 });
  t.same(config.containerGC, { minAgeMs: 30_000, maxPerPodContainer: 2, maxContainers: 100 });
  t.equal(config.podInfraContainerImage, 'localhost/kubelet-ts/pause:3.9');
  t.same(resolveConfig({}).imageGC, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 }, 'Go defaults');
  t.same(resolveConfig({}).containerGC, { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 }, 'Go defaults');
  t.throws(() => resolveConfig(parseFlags(['--image-gc-high-threshold=101'])), /invalid HighThresholdPercent 101, must be in range \[0-100\]/);
  t.throws(() => resolveConfig(parseFlags(['--image-gc-high-threshold=70', '--image-gc-low-threshold=80'])), /LowThresholdPercent 80 can not be higher than HighThresholdPercent 70/);
});
