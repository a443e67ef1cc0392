// The embedded runtime is never the silent default of a node that joins a cluster (issue 29).
import t from 'tap';
import {
  DEFAULT_REMOTE_RUNTIME_ENDPOINT,
  EMBEDDED_RUNTIME_TAINT,
  LOCAL_RUNTIME_ENDPOINT,
  parseFlags,
  registrationTaints,
  resolveConfig,
  usesEmbeddedRuntime,
} from '../src/index.js';

const base = ['--hostname-override=n1'];

t.test('standalone, the default runtime is the embedded one', async (t) => {
  const config = resolveConfig(parseFlags(base));
  t.equal(config.containerRuntimeEndpoint, LOCAL_RUNTIME_ENDPOINT);
  t.equal(config.imageServiceEndpoint, LOCAL_RUNTIME_ENDPOINT);
  t.ok(usesEmbeddedRuntime(config));
  t.equal(registrationTaints(config), EMBEDDED_RUNTIME_TAINT, 'would be tainted if it registered');
});

t.test('with --kubeconfig, the default is containerd\'s socket, as the Go kubelet since 1.24', async (t) => {
  const config = resolveConfig(parseFlags([...base, '--kubeconfig=/etc/kubernetes/kubelet.conf']));
  t.equal(DEFAULT_REMOTE_RUNTIME_ENDPOINT, 'unix:///run/containerd/containerd.sock');
  t.equal(config.containerRuntimeEndpoint, DEFAULT_REMOTE_RUNTIME_ENDPOINT);
  t.equal(config.imageServiceEndpoint, DEFAULT_REMOTE_RUNTIME_ENDPOINT);
  t.notOk(usesEmbeddedRuntime(config));
  t.equal(registrationTaints(config), '', 'no taint');
});

t.test('the embedded runtime named with --kubeconfig adds its NoSchedule taint to --register-with-taints once', async (t) => {
  const config = resolveConfig(parseFlags([...base, '--kubeconfig=/k', `--container-runtime-endpoint=${LOCAL_RUNTIME_ENDPOINT}`, '--register-with-taints=a=b:NoExecute,c:PreferNoSchedule']));
  t.ok(usesEmbeddedRuntime(config));
  t.equal(registrationTaints(config), `a=b:NoExecute,c:PreferNoSchedule,${EMBEDDED_RUNTIME_TAINT}`);
  const already = resolveConfig(parseFlags([...base, '--kubeconfig=/k', `--container-runtime-endpoint=${LOCAL_RUNTIME_ENDPOINT}`, '--register-with-taints=kubelet-ts.io/embedded-runtime:NoExecute']));
  t.equal(registrationTaints(already), 'kubelet-ts.io/embedded-runtime:NoExecute', 'an operator\'s own taint of that key wins');
  const imagesOnly = resolveConfig(parseFlags([...base, '--kubeconfig=/k', `--image-service-endpoint=${LOCAL_RUNTIME_ENDPOINT}`]));
  t.ok(usesEmbeddedRuntime(imagesOnly), 'the embedded image service alone counts too');
});

t.test('a containerd endpoint from the config file is kept', async (t) => {
  const config = resolveConfig(parseFlags([...base, '--kubeconfig=/k', '--container-runtime-endpoint=unix:///tmp/c.sock']));
  t.equal(config.containerRuntimeEndpoint, 'unix:///tmp/c.sock');
  t.equal(registrationTaints(config), '');
});
