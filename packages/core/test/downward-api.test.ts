import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  extractContainerResourceValue,
  extractFieldPathAsString,
  extractResourceValueByContainerName,
  findContainerInPod,
  formatMap,
  goQuote,
  quantityMilliValue,
  quantityValue,
  splitMaybeSubscriptedPath,
} from '../src/index.js';

const pod: V1Pod = {
  metadata: {
    name: 'web',
    namespace: 'prod',
    uid: 'uid-1',
    labels: { tier: 'front', app: 'web' },
    annotations: { 'example.com/Note': 'say "hi"\n', b: 'x' },
  },
  spec: {
    containers: [
      { name: 'app', resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '100m' } } },
      { name: 'sidecar' },
    ],
    initContainers: [{ name: 'init', resources: { requests: { 'hugepages-2Mi': '4Mi' }, limits: { 'hugepages-2Mi': '4Mi' } } }],
  },
};

t.test('quantities: value, milli-value rounded up, malformed input throws', async (t) => {
  t.equal(quantityMilliValue('100m'), 100);
  t.equal(quantityValue('128Mi'), 128 * 1024 * 1024);
  t.equal(quantityValue('1G'), 1e9);
  t.equal(quantityValue('1e3'), 1000);
  t.equal(quantityValue(undefined), 0);
  t.equal(quantityMilliValue('0.1'), 100);
  t.equal(quantityMilliValue('1n'), 1);
  t.equal(quantityValue('1m'), 1);
  t.equal(quantityValue('1.5Ki'), 1536);
  t.throws(() => quantityValue('abc'), /quantities must match the regular expression/);
});

t.test("goQuote escapes as Go's %q", async (t) => {
  t.equal(goQuote('plain'), '"plain"');
  t.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  t.equal(goQuote('l1\nl2\tx\r'), '"l1\\nl2\\tx\\r"');
  t.equal(goQuote('\x07\x0b\x1b\x7f'), '"\\a\\v\\x1b\\x7f"');
  t.equal(goQuote('héllo 世界'), '"héllo 世界"');
  t.equal(goQuote('\u00a0\u2028'), '"\\u00a0\\u2028"');
});

t.test('formatMap: sorted key="value" lines, no trailing newline', async (t) => {
  t.equal(formatMap({ b: '2', a: 'x"y' }), 'a="x\\"y"\nb="2"');
  t.equal(formatMap({}), '');
  t.equal(formatMap(undefined), '');
});

t.test('splitMaybeSubscriptedPath', async (t) => {
  t.same(splitMaybeSubscriptedPath("metadata.labels['a']"), { path: 'metadata.labels', subscript: 'a' });
  t.same(splitMaybeSubscriptedPath("metadata.annotations['a/b']"), { path: 'metadata.annotations', subscript: 'a/b' });
  t.equal(splitMaybeSubscriptedPath('metadata.labels'), undefined);
  t.equal(splitMaybeSubscriptedPath("['a']"), undefined);
});

t.test('extractFieldPathAsString: metadata fields, maps, subscripts, and Go errors', async (t) => {
  t.equal(extractFieldPathAsString(pod, 'metadata.name'), 'web');
  t.equal(extractFieldPathAsString(pod, 'metadata.namespace'), 'prod');
  t.equal(extractFieldPathAsString(pod, 'metadata.uid'), 'uid-1');
  t.equal(extractFieldPathAsString(pod, 'metadata.labels'), 'app="web"\ntier="front"');
  t.equal(extractFieldPathAsString(pod, 'metadata.annotations'), 'b="x"\nexample.com/Note="say \\"hi\\"\\n"');
  t.equal(extractFieldPathAsString(pod, "metadata.labels['tier']"), 'front');
  t.equal(extractFieldPathAsString(pod, "metadata.labels['missing']"), '');
  t.equal(extractFieldPathAsString(pod, "metadata.annotations['example.com/Note']"), 'say "hi"\n');
  t.throws(() => extractFieldPathAsString(pod, 'spec.nodeName'), { message: 'unsupported fieldPath: spec.nodeName' });
  t.throws(() => extractFieldPathAsString(pod, "spec.containers['a']"), { message: 'fieldPath "spec.containers[\'a\']" does not support subscript' });
  t.throws(() => extractFieldPathAsString(pod, "metadata.labels['-bad']"), {
    message:
      "invalid key subscript in metadata.labels['-bad']: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  });
  t.throws(() => extractFieldPathAsString(pod, "metadata.labels['a/b/c']"), /^invalid key subscript in .*a qualified name must consist/);
  t.throws(() => extractFieldPathAsString(pod, "metadata.labels['Bad_Prefix/x']"), /prefix part a lowercase RFC 1123 subdomain/);
});

t.test('resource values: limits, requests, divisors, allocatable for missing limits', async (t) => {
  const app = findContainerInPod(pod, 'app');
  const sidecar = findContainerInPod(pod, 'sidecar');
  const allocatable = { milliCpu: 3500, memoryBytes: 8 * 2 ** 30, ephemeralStorageBytes: 10e9 };
  t.equal(extractContainerResourceValue({ resource: 'limits.cpu' }, app), '1', 'cpu rounds up to whole cores');
  t.equal(extractContainerResourceValue({ resource: 'limits.cpu', divisor: '1m' }, app), '250');
  t.equal(extractContainerResourceValue({ resource: 'requests.cpu', divisor: '1m' }, app), '100');
  t.equal(extractContainerResourceValue({ resource: 'limits.memory' }, app), String(64 * 2 ** 20));
  t.equal(extractContainerResourceValue({ resource: 'limits.memory', divisor: '1Mi' }, app), '64');
  t.equal(extractContainerResourceValue({ resource: 'requests.memory', divisor: '1Mi' }, app), '64', 'a missing request is the limit');
  t.equal(extractContainerResourceValue({ resource: 'limits.memory', divisor: '0' }, app), String(64 * 2 ** 20), 'zero divisor is 1');
  t.equal(extractContainerResourceValue({ resource: 'limits.cpu', divisor: '1m' }, sidecar, allocatable), '3500');
  t.equal(extractContainerResourceValue({ resource: 'limits.cpu' }, sidecar, allocatable), '4');
  t.equal(extractContainerResourceValue({ resource: 'limits.memory', divisor: '1Gi' }, sidecar, allocatable), '8');
  t.equal(extractContainerResourceValue({ resource: 'limits.ephemeral-storage', divisor: '1G' }, sidecar, allocatable), '10');
  t.equal(extractContainerResourceValue({ resource: 'requests.memory' }, sidecar, allocatable), '0', 'requests never fall back to allocatable');
  t.equal(extractContainerResourceValue({ resource: 'limits.cpu' }, sidecar), '0');
  t.equal(extractResourceValueByContainerName({ resource: 'requests.hugepages-2Mi', divisor: '1Mi' }, pod, 'init'), '4');
  t.equal(extractResourceValueByContainerName({ resource: 'limits.hugepages-2Mi', divisor: '1Mi' }, pod, 'init', allocatable), '4');
  t.throws(() => extractContainerResourceValue({ resource: 'limits.gpu' }, app), { message: 'unsupported container resource : limits.gpu' });
  t.throws(() => extractResourceValueByContainerName({ resource: 'limits.cpu' }, pod, 'nope'), { message: 'container nope not found' });
});
