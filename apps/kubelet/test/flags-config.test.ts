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

t.test('container manager and eviction settings: Go defaults, flags, config file, validation', async (t) => {
  const containerd = ['--container-runtime-endpoint=unix:///run/containerd/containerd.sock', '--hostname-override=n'];
  const defaults = resolveConfig(parseFlags(containerd));
  t.equal(defaults.cgroupsPerQOS, true, '--cgroups-per-qos defaults to true with a CRI runtime');
  t.equal(defaults.cgroupRoot, '/', 'cgroup root defaults to / with --cgroups-per-qos, as Go');
  t.equal(defaults.cgroupDriver, 'cgroupfs');
  t.same(defaults.enforceNodeAllocatable, ['pods'], '--enforce-node-allocatable defaults to pods');
  t.equal(defaults.cpuCFSQuota, true);
  t.equal(defaults.cpuCFSQuotaPeriodMs, 100);
  t.equal(defaults.podPidsLimit, -1);
  t.equal(defaults.oomScoreAdj, -999);
  t.same(defaults.eviction, { hard: undefined, soft: {}, softGracePeriod: {}, minimumReclaim: {}, maxPodGracePeriodSeconds: 0, pressureTransitionPeriodMs: 300_000 }, 'eviction defaults');

  const local = resolveConfig(parseFlags(['--hostname-override=n']));
  t.equal(local.cgroupsPerQOS, false, 'the embedded local runtime has no pod cgroups by default');
  t.same(local.enforceNodeAllocatable, [], 'and so enforces no node allocatable');

  const flags = resolveConfig(
    parseFlags([
      ...containerd,
      '--cgroup-root=/custom',
      '--enforce-node-allocatable=pods,system-reserved',
      '--system-reserved-cgroup=/system.slice',
      '--eviction-hard=memory.available<500Mi,nodefs.available<5%',
      '--eviction-soft=memory.available<1Gi',
      '--eviction-soft-grace-period=memory.available=1m30s',
      '--eviction-minimum-reclaim=memory.available=100Mi',
      '--eviction-max-pod-grace-period=30',
      '--eviction-pressure-transition-period=30s',
      '--pod-max-pids=1024',
      '--cpu-cfs-quota=false',
      '--cpu-cfs-quota-period=50ms',
    ]),
  );
  t.equal(flags.cgroupRoot, '/custom');
  t.same(flags.enforceNodeAllocatable, ['pods', 'system-reserved']);
  t.equal(flags.systemReservedCgroup, '/system.slice');
  t.same(flags.eviction, {
    hard: { 'memory.available': '500Mi', 'nodefs.available': '5%' },
    soft: { 'memory.available': '1Gi' },
    softGracePeriod: { 'memory.available': '1m30s' },
    minimumReclaim: { 'memory.available': '100Mi' },
    maxPodGracePeriodSeconds: 30,
    pressureTransitionPeriodMs: 30_000,
  });
  t.equal(flags.podPidsLimit, 1024);
  t.equal(flags.cpuCFSQuota, false);
  t.equal(flags.cpuCFSQuotaPeriodMs, 50);

  const dir = mkdtempSync(join(tmpdir(), 'kubelet-cm-config-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'containerRuntimeEndpoint: unix:///run/containerd/containerd.sock',
      'cgroupsPerQOS: true',
      'cgroupRoot: /file-root',
      'enforceNodeAllocatable: [pods, kube-reserved]',
      'kubeReservedCgroup: /kube.slice',
      'evictionSoft: {memory.available: 2Gi}',
      'evictionSoftGracePeriod: {memory.available: 2m}',
      'evictionPressureTransitionPeriod: 1m',
      'evictionMaxPodGracePeriod: 10',
      'podPidsLimit: 100',
      'oomScoreAdj: -500',
    ].join('\n'),
  );
  const fromFile = resolveConfig(parseFlags([`--config=${file}`, '--hostname-override=n']));
  t.equal(fromFile.cgroupRoot, '/file-root');
  t.same(fromFile.enforceNodeAllocatable, ['pods', 'kube-reserved']);
  t.equal(fromFile.kubeReservedCgroup, '/kube.slice');
  t.same(fromFile.eviction.soft, { 'memory.available': '2Gi' });
  t.same(fromFile.eviction.softGracePeriod, { 'memory.available': '2m' });
  t.equal(fromFile.eviction.pressureTransitionPeriodMs, 60_000);
  t.equal(fromFile.eviction.maxPodGracePeriodSeconds, 10);
  t.equal(fromFile.podPidsLimit, 100);
  t.equal(fromFile.oomScoreAdj, -500);

  const bad = (args: string[]) => () => resolveConfig(parseFlags([...containerd, ...args]));
  t.throws(bad(['--enforce-node-allocatable=pods,bogus']), /invalid option "bogus" specified for enforceNodeAllocatable/);
  t.throws(bad(['--enforce-node-allocatable=none,pods']), /may not contain additional enforcements when "none" is specified/);
  t.throws(bad(['--enforce-node-allocatable=pods,system-reserved']), /systemReservedCgroup \(--system-reserved-cgroup\) must be specified/);
  t.throws(bad(['--enforce-node-allocatable=kube-reserved']), /kubeReservedCgroup \(--kube-reserved-cgroup\) must be specified/);
  t.throws(bad(['--cgroups-per-qos=false', '--enforce-node-allocatable=pods']), /is not supported unless cgroupsPerQOS \(--cgroups-per-qos\) feature is turned on/);
  t.throws(bad(['--cgroup-driver=upstart']), /cgroupDriver: invalid value "upstart": must be cgroupfs or systemd/);
  t.throws(bad(['--oom-score-adj=-1001']), /oomScoreAdj \(--oom-score-adj\) -1001 must be between -1000 and 1000/);
  t.throws(bad(['--cpu-cfs-quota-period=2s']), /cpuCFSQuotaPeriod \(--cpu-cfs-quota-period\) 2000ms must be between 1ms and 1sec/);
  t.throws(bad(['--eviction-soft=memory.available']), /--eviction-soft: invalid entry "memory.available": expected signal<value/);
  t.throws(bad(['--pod-max-pids=-2']), /podPidsLimit \(--pod-max-pids\) -2 must be -1 or greater/);
  t.equal(resolveConfig(parseFlags([...containerd, '--cgroups-per-qos=false', '--enforce-node-allocatable='])).cgroupsPerQOS, false, 'pod cgroups off with no enforcement');
});

t.test('TLS bootstrap and rotation: flags, config fields and their checks', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-tls-flags-'));
  const defaults = resolveConfig(parseFlags([]));
  t.equal(defaults.rotateCertificates, false, 'off by default, as Go');
  t.equal(defaults.serverTLSBootstrap, false);
  t.equal(defaults.bootstrapKubeconfig, undefined);
  const flagged = resolveConfig(parseFlags(['--kubeconfig=k.conf', '--bootstrap-kubeconfig=b.conf', '--rotate-certificates', '--rotate-server-certificates', '--cert-dir=pki']), dir);
  t.equal(flagged.bootstrapKubeconfig, join(dir, 'b.conf'), 'paths are made absolute');
  t.equal(flagged.kubeconfig, join(dir, 'k.conf'));
  t.equal(flagged.certDir, join(dir, 'pki'));
  t.equal(flagged.rotateCertificates, true);
  t.equal(flagged.serverTLSBootstrap, true);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nrotateCertificates: true\nserverTLSBootstrap: true\n');
  const fromFile = resolveConfig(parseFlags([`--config=${file}`]), dir);
  t.equal(fromFile.rotateCertificates, true);
  t.equal(fromFile.serverTLSBootstrap, true);
  t.equal(resolveConfig(parseFlags([`--config=${file}`, '--rotate-server-certificates=false']), dir).serverTLSBootstrap, false, 'the flag wins over the file');
  t.throws(() => resolveConfig(parseFlags(['--bootstrap-kubeconfig=b.conf'])), /--bootstrap-kubeconfig needs --kubeconfig/);
});
