import t from 'tap';
import { formatFieldError, formatFieldErrors, isDNS1123Label, isDNS1123Subdomain, validatePod, validatePodShape } from '../src/index.js';
import { makeTestPod } from '../src/testing.js';
import type { V1Pod } from '@kubernetes/client-node';

t.test('field errors print as Go field.Error does', async (t) => {
  t.equal(formatFieldError({ field: 'spec.containers[1].name', type: 'Duplicate value', value: 'web' }), 'spec.containers[1].name: Duplicate value: "web"');
  t.equal(formatFieldError({ field: 'spec.containers', type: 'Required value' }), 'spec.containers: Required value');
  t.equal(formatFieldError({ field: 'x', type: 'Required value', detail: 'why' }), 'x: Required value: why');
  t.equal(formatFieldError({ field: 'p', type: 'Invalid value', value: 70000, detail: 'too big' }), 'p: Invalid value: 70000: too big');
  t.equal(formatFieldError({ field: 'p', type: 'Invalid value', value: { a: 1 } }), 'p: Invalid value: {"a":1}');
  t.equal(formatFieldError({ field: 'p', type: 'Not found', value: undefined }), 'p: Not found: null');
  t.equal(formatFieldErrors([{ field: 'a', type: 'Required value' }]), 'a: Required value');
  t.equal(formatFieldErrors([{ field: 'a', type: 'Required value' }, { field: 'b', type: 'Required value' }]), '[a: Required value, b: Required value]');
});

t.test('DNS-1123 names', async (t) => {
  t.same(isDNS1123Label('web-1'), []);
  t.equal(isDNS1123Label('Web').length, 1);
  t.equal(isDNS1123Label('-a').length, 1);
  t.equal(isDNS1123Label('a'.repeat(64)).length, 1);
  t.same(isDNS1123Subdomain('a.b-c.d'), []);
  t.equal(isDNS1123Subdomain('a..b').length, 1);
  t.same(isDNS1123Subdomain('a'.repeat(254)), ['must be no more than 253 characters'], 'too long (the pattern itself matches)');
});

t.test('a valid pod has no errors; each rule names its field', async (t) => {
  t.same(validatePod(makeTestPod({ name: 'ok', containers: ['a', { name: 'b', ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }] }] })), []);
  const fields = (mutate: (p: ReturnType<typeof makeTestPod>) => void) => {
    const p = makeTestPod({ name: 'p', containers: ['a', 'b'] });
    mutate(p);
    return validatePod(p).map((e) => `${e.field}: ${e.type}`);
  };
  t.same(fields((p) => (p.metadata!.namespace = '')), ['metadata.namespace: Required value']);
  t.same(fields((p) => (p.spec!.containers[1].name = 'a')), ['spec.containers[1].name: Duplicate value']);
  t.same(fields((p) => (p.spec!.containers[0].imagePullPolicy = 'Sometimes')), ['spec.containers[0].imagePullPolicy: Unsupported value']);
  t.same(fields((p) => (p.spec!.restartPolicy = undefined)), ['spec.restartPolicy: Required value']);
  t.same(fields((p) => (p.spec!.dnsPolicy = 'None')), ['spec.dnsConfig: Required value']);
  t.same(fields((p) => (p.spec!.terminationGracePeriodSeconds = -1)), ['spec.terminationGracePeriodSeconds: Invalid value']);
  t.same(fields((p) => (p.spec!.activeDeadlineSeconds = 0)), ['spec.activeDeadlineSeconds: Invalid value']);
  t.same(fields((p) => (p.spec!.volumes = [{ name: 'v' }, { name: 'v' }, { name: '' }])), ['spec.volumes[1].name: Duplicate value', 'spec.volumes[2].name: Required value']);
  t.same(
    fields((p) => (p.spec!.containers[0].ports = [{ containerPort: 0 }, { containerPort: 1, hostPort: 70000, protocol: 'ICMP' }])),
    ['spec.containers[0].ports[0].containerPort: Required value', 'spec.containers[0].ports[0].protocol: Required value', 'spec.containers[0].ports[1].hostPort: Invalid value', 'spec.containers[0].ports[1].protocol: Unsupported value'],
  );
  t.same(
    fields((p) => (p.spec!.containers[0].ports = [{ containerPort: 1, protocol: 'TCP', name: 'http' }, { containerPort: 2, protocol: 'TCP', name: 'http' }, { containerPort: 3, protocol: 'TCP', name: '123' }])),
    ['spec.containers[0].ports[1].name: Duplicate value', 'spec.containers[0].ports[2].name: Invalid value'],
  );
  t.same(fields((p) => (p.spec!.containers[0].volumeMounts = [{ name: '', mountPath: '' }])), ['spec.containers[0].volumeMounts[0].name: Required value', 'spec.containers[0].volumeMounts[0].mountPath: Required value']);
  t.same(fields((p) => delete p.spec), ['spec: Required value']);
});

t.test('shape checks catch wrong JSON types before decoding', async (t) => {
  t.same(validatePodShape(null).map((e) => e.field), ['<root>']);
  t.same(validatePodShape({ metadata: 'x' }).map((e) => e.field), ['metadata']);
  t.same(validatePodShape({ metadata: { name: 5, labels: { a: 1 } } }).map((e) => e.field), ['metadata.name', 'metadata.labels[a]']);
  t.same(
    validatePodShape({ spec: { containers: [null, 'x', { name: 1, command: 'ls', ports: [{ containerPort: '80' }] }], volumes: [1], terminationGracePeriodSeconds: 'x' } }).map((e) => e.field),
    ['spec.containers[0]', 'spec.containers[1]', 'spec.containers[2].name', 'spec.containers[2].command', 'spec.containers[2].ports[0].containerPort', 'spec.volumes[0]', 'spec.terminationGracePeriodSeconds'],
  );
});

t.test('paths that decide where the kubelet writes on the host are validated as Go validates them', async (t) => {
  const pod = (spec: Record<string, unknown>): V1Pod =>
    ({
      metadata: { name: 'p', namespace: 'default' },
      spec: { restartPolicy: 'Always', containers: [{ name: 'c', image: 'busybox' }], ...spec },
    }) as V1Pod;
  const texts = (p: V1Pod) => validatePod(p).map(formatFieldError);

  t.same(
    texts(pod({ volumes: [{ name: 'v', emptyDir: {} }], containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'v', mountPath: '/m', subPath: '../../etc' }, { name: 'v', mountPath: '/n', subPath: '/etc' }, { name: 'v', mountPath: '/o', subPathExpr: 'a/../../$(X)' }] }] })),
    [
      `spec.containers[0].volumeMounts.subPath: Invalid value: "../../etc": must not contain '..'`,
      `spec.containers[0].volumeMounts.subPath: Invalid value: "/etc": must be a relative path`,
      `spec.containers[0].volumeMounts.subPathExpr: Invalid value: "a/../../$(X)": must not contain '..'`,
    ],
    'subPath and subPathExpr stay below the volume (named without the mount\'s index, as Go 1.20 names them)',
  );
  t.same(
    texts(pod({ volumes: [{ name: 'v', emptyDir: {} }], containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'v', mountPath: '/m', subPath: 'a', subPathExpr: 'b' }, { name: 'v', mountPath: '/m' }] }] })),
    [
      'spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "b": subPathExpr and subPath are mutually exclusive',
      'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/m": must be unique',
    ],
  );
  t.same(
    texts(pod({
      volumes: [
        { name: 'cm', configMap: { name: 'x', items: [{ key: 'k', path: '../escape' }, { key: '', path: '..data' }, { key: 'k', path: '/abs', mode: 0o1777 }] } },
        { name: 'sec', secret: { secretName: 's', defaultMode: -1, items: [{ key: 'k', path: 'ok/../../up' }] } },
        { name: 'dapi', downwardAPI: { items: [{ path: '../../labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        { name: 'proj', projected: { sources: [{ configMap: { name: 'x', items: [{ key: 'k', path: '..hidden' }] } }, { downwardAPI: { items: [{ path: '/x', fieldRef: { fieldPath: 'metadata.name' } }] } }] } },
      ],
    })),
    [
      `spec.volumes[0].configMap.items[0].path: Invalid value: "../escape": must not contain '..'`,
      'spec.volumes[0].configMap.items[1].key: Required value',
      `spec.volumes[0].configMap.items[1].path: Invalid value: "..data": must not start with '..'`,
      'spec.volumes[0].configMap.items[2].path: Invalid value: "/abs": must be a relative path',
      'spec.volumes[0].configMap.items[2].mode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive',
      `spec.volumes[1].secret.items[0].path: Invalid value: "ok/../../up": must not contain '..'`,
      'spec.volumes[1].secret.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive',
      `spec.volumes[2].downwardAPI.path: Invalid value: "../../labels": must not contain '..'`,
      `spec.volumes[3].projected.sources[0].configMap.items[0].path: Invalid value: "..hidden": must not start with '..'`,
      'spec.volumes[3].projected.sources[1].downwardAPI.path: Invalid value: "/x": must be a relative path',
    ],
    'configMap, secret, downwardAPI and projected file names',
  );
  t.same(
    texts(pod({ volumes: [{ name: 'h', hostPath: { path: '/var/../etc', type: 'Folder' } }, { name: 'root', hostPath: { path: '/', type: 'File' } }] })),
    [
      `spec.volumes[0].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`,
      'spec.volumes[0].hostPath.type: Unsupported value: "Folder": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
    ],
    'hostPath: no backsteps, a known type (a wrong type for what is there fails at mount time)',
  );
  t.same(
    texts(pod({ containers: [{ name: 'c', image: 'i', env: [{ name: 'OK_1', value: 'x' }, { name: '1BAD', value: 'y' }, { name: '', value: 'z' }] }] })),
    [
      `spec.containers[0].env[1].name: Invalid value: "1BAD": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')`,
      'spec.containers[0].env[2].name: Required value',
    ],
  );
  t.same(texts(pod({ volumes: [{ name: 'v', configMap: { name: 'x', items: [{ key: 'k', path: 'a/b..c/d' }] } }], containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'v', mountPath: '/m', subPath: 'x..y/z' }] }] })), [], '".." inside a name is fine');
});
