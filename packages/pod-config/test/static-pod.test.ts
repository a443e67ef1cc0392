import t from 'tap';
import { ConfigHashAnnotationKey, ConfigSourceAnnotationKey, formatRFC3339Nano } from '@kubelet-ts/core';
import {
  ManifestError,
  decodePodsManifest,
  decodeSinglePodManifest,
  defaultImagePullPolicy,
  generatePodName,
  serializePod,
  setPodDefaults,
  staticPodUID,
  type StaticPodOrigin,
} from '../src/index.js';
import { stringify } from 'yaml';

const fileOrigin: StaticPodOrigin = { kind: 'file', location: '/etc/kubernetes/manifests/web.yaml', nodeName: 'Node-1' };
const urlOrigin: StaticPodOrigin = { kind: 'http', location: 'http://example.test/pods', nodeName: 'node-1' };

const webYaml = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: { app: web }
spec:
  containers:
  - name: web
    image: nginx:1.25
    ports:
    - containerPort: 80
  - name: sidecar
    image: busybox
`;

t.test('a file manifest becomes a static pod: name suffix, namespace, node, UID, hash, source, defaults', async (t) => {
  const r = decodeSinglePodManifest(webYaml, fileOrigin);
  t.same(r.errors, []);
  t.equal(r.pods.length, 1);
  const pod = r.pods[0];
  t.equal(pod.metadata?.name, 'web-node-1', 'name suffixed with the lower-cased node name');
  t.equal(pod.metadata?.namespace, 'default');
  t.equal(pod.spec?.nodeName, 'Node-1');
  t.match(pod.metadata?.uid, /^[0-9a-f]{32}$/, 'md5 hex, as Go');
  t.equal(pod.metadata?.annotations?.[ConfigHashAnnotationKey], pod.metadata?.uid, 'config.hash is the UID');
  t.equal(pod.metadata?.annotations?.[ConfigSourceAnnotationKey], 'file');
  t.same(pod.metadata?.labels, { app: 'web' });
  t.equal(pod.status?.phase, 'Pending');
  t.same(pod.spec?.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }], 'file pods tolerate NoExecute taints');
  t.equal(pod.spec?.restartPolicy, 'Always');
  t.equal(pod.spec?.dnsPolicy, 'ClusterFirst');
  t.equal(pod.spec?.terminationGracePeriodSeconds, 30);
  t.equal(pod.spec?.schedulerName, 'default-scheduler');
  t.equal(pod.spec?.enableServiceLinks, true);
  const [web, sidecar] = pod.spec?.containers ?? [];
  t.equal(web.imagePullPolicy, 'IfNotPresent');
  t.equal(sidecar.imagePullPolicy, 'Always', 'untagged image: Always');
  t.equal(web.terminationMessagePath, '/dev/termination-log');
  t.equal(web.terminationMessagePolicy, 'File');
  t.equal(web.ports?.[0].protocol, 'TCP');
});

t.test('the UID is deterministic in content, source and node, and ignores formatting and field order', async (t) => {
  const uid = (text: string, origin = fileOrigin) => decodeSinglePodManifest(text, origin).pods[0].metadata?.uid;
  const a = uid(webYaml);
  t.equal(uid(webYaml), a, 'same input, same UID');
  const json = JSON.stringify({
    spec: {
      containers: [
        { image: 'nginx:1.25', name: 'web', ports: [{ containerPort: 80 }] },
        { name: 'sidecar', image: 'busybox' },
      ],
    },
    metadata: { labels: { app: 'web' }, name: 'web' },
    kind: 'Pod',
    apiVersion: 'v1',
  });
  t.equal(uid(json), a, 'the same pod as JSON with other field order has the same UID');
  t.not(uid(webYaml.replace('nginx:1.25', 'nginx:1.26')), a, 'content changes the UID');
  t.not(uid(webYaml, { ...fileOrigin, location: '/other.yaml' }), a, 'the file path is hashed in');
  t.not(uid(webYaml, { ...fileOrigin, nodeName: 'node-2' }), a, 'the node is hashed in');
  const u1 = decodeSinglePodManifest(webYaml, { ...urlOrigin, nodeName: 'n1' }).pods[0].metadata?.uid;
  const u2 = decodeSinglePodManifest(webYaml, { ...urlOrigin, nodeName: 'n2' }).pods[0].metadata?.uid;
  t.equal(u1, u2, 'URL pods hash the URL, not the node (as Go)');
  t.equal(uid(webYaml.replace('name: web\n  labels', 'name: web\n  uid: given\n  labels')), 'given', 'a UID in the manifest is kept');
  // Direct: the documented recipe.
  const pod = setPodDefaults(decodeSinglePodManifest(webYaml, fileOrigin).pods[0]);
  t.match(staticPodUID(pod, fileOrigin), /^[0-9a-f]{32}$/);
});

t.test('HTTP manifests: a Pod, a PodList, a List, a bare array, in JSON or YAML', async (t) => {
  const p = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'i:1' }] } });
  const names = (text: string) => decodePodsManifest(text, urlOrigin).pods.map((x) => x.metadata?.name);
  t.same(names(JSON.stringify(p('a'))), ['a-node-1']);
  t.same(names(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [p('a'), p('b')] })), ['a-node-1', 'b-node-1']);
  t.same(names(stringify({ apiVersion: 'v1', kind: 'List', items: [p('a')] })), ['a-node-1']);
  t.same(names(JSON.stringify([p('a'), { metadata: { name: 'b' }, spec: { containers: [{ name: 'c', image: 'i' }] } }])), ['a-node-1', 'b-node-1'], 'items may omit kind');
  t.same(names(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [] })), []);
  const http = decodePodsManifest(JSON.stringify(p('a')), urlOrigin).pods[0];
  t.equal(http.metadata?.annotations?.[ConfigSourceAnnotationKey], 'http');
  t.equal(http.spec?.tolerations, undefined, 'no toleration for URL pods');
});

t.test('bad input gets one clear error naming the location and the field', async (t) => {
  const check = (name: string, text: string, pattern: RegExp, parsed = true) => {
    const r = decodeSinglePodManifest(text, fileOrigin);
    t.equal(r.pods.length, 0, `${name}: skipped`);
    t.equal(r.errors.length, 1, `${name}: one error`);
    t.equal(r.parsed, parsed, `${name}: parsed=${parsed}`);
    t.type(r.errors[0], ManifestError);
    t.match(r.errors[0].message, /^\/etc\/kubernetes\/manifests\/web\.yaml: /, `${name}: names the file`);
    t.match(r.errors[0].message, pattern, `${name}: ${r.errors[0].message}`);
  };
  check('malformed YAML', 'apiVersion: v1\nkind: Pod\nmetadata: {name: web\n', /couldn't parse as pod/, false);
  check('half-written JSON', '{"apiVersion":"v1","kind":"Pod","metadata":{"na', /couldn't parse as pod/, false);
  check('empty file', '', /empty document/, false);
  check('no kind', 'metadata: {name: a}\n', /Object 'Kind' is missing/, false);
  check('two documents', `${webYaml}\n---\n${webYaml}`, /expected one document, found 2/, false);
  check('not a pod', 'apiVersion: v1\nkind: Service\nmetadata: {name: a}\n', /kind: Unsupported value: "Service"/);
  check('wrong apiVersion', 'apiVersion: v2\nkind: Pod\nmetadata: {name: a}\n', /apiVersion: Unsupported value: "v2"/);
  check('no containers', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: []}\n', /spec\.containers: Required value/);
  check('no spec', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n', /spec\.containers: Required value/);
  check('no name', 'apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n', /metadata\.name: Required value/);
  check('bad name', 'apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{name: c, image: i}]}\n', /metadata\.name: Invalid value: "Web_1-node-1": a lowercase RFC 1123 subdomain/);
  check('bad namespace', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: "a.b"}\nspec: {containers: [{name: c, image: i}]}\n', /metadata\.namespace: Invalid value: "a\.b"/);
  check(
    'duplicate container names',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: web, image: i}, {name: web, image: i}]}\n',
    /invalid pod: spec\.containers\[1\]\.name: Duplicate value: "web"$/,
  );
  check(
    'init and regular container with the same name',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {initContainers: [{name: web, image: i}], containers: [{name: web, image: i}]}\n',
    /spec\.containers\[0\]\.name: Duplicate value: "web"/,
  );
  check(
    'unknown restart policy',
    'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}\n',
    /spec\.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"/,
  );
  check('missing image', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n', /spec\.containers\[0\]\.image: Required value/);
  check('containers not a list', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: web}\n', /spec\.containers: Invalid value: "web": must be a list/);
  check('port out of range', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i, ports: [{containerPort: 70000}]}]}\n', /spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive/);
  check('bad dnsPolicy', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {dnsPolicy: Maybe, containers: [{name: c, image: i}]}\n', /spec\.dnsPolicy: Unsupported value: "Maybe"/);
  const several = decodeSinglePodManifest('apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {restartPolicy: X, containers: [{name: C, image: i}]}\n', fileOrigin);
  t.match(several.errors[0].message, /invalid pod: \[spec\.containers\[0\]\.name: Invalid value: "C": .*, spec\.restartPolicy: Unsupported value: "X".*\]$/, 'several errors as a list');
  t.same(
    several.errors[0].fieldErrors.map((e) => e.field),
    ['spec.containers[0].name', 'spec.restartPolicy'],
  );
});

t.test('HTTP bodies: garbage is unparsed; an invalid pod in a list is skipped, the others kept', async (t) => {
  const garbage = decodePodsManifest('<html>oops</html>', urlOrigin);
  t.equal(garbage.parsed, false);
  t.match(garbage.errors[0].message, /^http:\/\/example\.test\/pods: couldn't parse as single pod or list of pods/);
  t.equal(decodePodsManifest('{"kind":"Service"}', urlOrigin).parsed, false);
  t.equal(decodePodsManifest('42', urlOrigin).parsed, false);
  t.equal(decodePodsManifest('{"kind":"PodList","items":"x"}', urlOrigin).parsed, false);
  const list = decodePodsManifest(
    JSON.stringify({
      kind: 'PodList',
      apiVersion: 'v1',
      items: [
        { metadata: { name: 'good' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        { metadata: { name: 'bad', namespace: 'ns1' }, spec: { containers: [] } },
        { kind: 'Service', metadata: { name: 'svc' } },
      ],
    }),
    urlOrigin,
  );
  t.equal(list.parsed, true);
  t.same(
    list.pods.map((p) => p.metadata?.name),
    ['good-node-1'],
  );
  t.equal(list.errors.length, 2);
  t.match(list.errors[0].message, /^http:\/\/example\.test\/pods: item 1: invalid pod: spec\.containers: Required value$/);
  t.equal(list.errors[0].podKey, 'ns1/bad');
  t.equal(list.errors[0].index, 1);
  t.match(list.errors[1].message, /item 2: kind: Unsupported value: "Service"/);
});

t.test('defaults and helpers', async (t) => {
  t.equal(generatePodName('web', 'NODE.example'), 'web-node.example');
  t.equal(defaultImagePullPolicy('nginx'), 'Always');
  t.equal(defaultImagePullPolicy('nginx:latest'), 'Always');
  t.equal(defaultImagePullPolicy('nginx:1'), 'IfNotPresent');
  t.equal(defaultImagePullPolicy('localhost:5000/nginx'), 'Always', 'a registry port is not a tag');
  t.equal(defaultImagePullPolicy('nginx@sha256:abc'), 'IfNotPresent');
  t.equal(defaultImagePullPolicy(undefined), 'IfNotPresent');
  t.equal(formatRFC3339Nano(Date.parse('2026-01-01T00:00:00Z')), '2026-01-01T00:00:00Z');
  t.equal(formatRFC3339Nano(Date.parse('2026-01-01T00:00:00.120Z')), '2026-01-01T00:00:00.12Z');
  const r = decodeSinglePodManifest(
    stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        hostNetwork: true,
        volumes: [{ name: 'v' }, { name: 'cm', configMap: { name: 'x' } }, { name: 'h', hostPath: { path: '/x' } }],
        containers: [
          {
            name: 'c',
            image: 'i:1',
            ports: [{ containerPort: 8080 }],
            env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            resources: { limits: { cpu: '1' } },
            livenessProbe: { httpGet: { port: 8080 } },
            volumeMounts: [{ name: 'v', mountPath: '/v' }],
          },
        ],
      },
    }),
    fileOrigin,
  );
  t.same(r.errors, []);
  const spec = r.pods[0].spec!;
  t.same(spec.volumes?.[0].emptyDir, {}, 'a volume without a source is an emptyDir');
  t.equal(spec.volumes?.[1].configMap?.defaultMode, 0o644);
  t.equal(spec.volumes?.[2].hostPath?.type, '');
  const c = spec.containers[0];
  t.equal(c.ports?.[0].hostPort, 8080, 'hostNetwork: hostPort defaults to containerPort');
  t.equal(c.env?.[0].valueFrom?.fieldRef?.apiVersion, 'v1');
  t.same(c.resources?.requests, { cpu: '1' }, 'requests default to limits');
  t.match(c.livenessProbe, { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3, httpGet: { path: '/', scheme: 'HTTP' } });
  // The pod serializes back with API field names.
  const json = serializePod(r.pods[0]);
  t.equal((json.metadata as Record<string, unknown>).name, 'p-node-1');
  const unknownMount = decodeSinglePodManifest(
    stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }] } }),
    fileOrigin,
  );
  t.match(unknownMount.errors[0].message, /spec\.containers\[0\]\.volumeMounts\[0\]\.name: Not found: "nope"/);
});
