// The generated codec against @grpc/proto-loader: for every runtime.v1 message, sample objects (nested messages,
// maps, repeated fields, enums, int64, bytes, unset and explicitly default fields, and inputs proto-loader converts:
// enum numbers, int64 strings, numbers for strings) give the same bytes, and the same bytes give the same object,
// key order and proto3 defaults included.
import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import { deepStrictEqual } from 'node:assert';
import type * as protobufjs from 'protobufjs';
import type * as protoLoader from '@grpc/proto-loader';
import { criCodec, criProtoLoaderOptions, criProtoPath, loadCriPackage, loadCriServices } from '../src/index.js';

const require = createRequire(import.meta.url);
const protobuf = require('protobufjs') as typeof protobufjs;
const codec = criCodec();

// The root proto-loader builds (loadProtosWithOptionsSync), and its serializer/deserializer for any message.
const root = new protobuf.Root();
root.loadSync(criProtoPath, criProtoLoaderOptions as protobufjs.IParseOptions);
root.resolveAll();
const types: protobufjs.Type[] = [];
(function walk(ns: protobufjs.NamespaceBase) {
  for (const object of ns.nestedArray) {
    if (object instanceof protobuf.Type) types.push(object);
    if ((object as protobufjs.Namespace).nestedArray) walk(object as protobufjs.Namespace);
  }
})(root);
const loader = {
  serialize: (type: protobufjs.Type, value: unknown) => Buffer.from(type.encode(type.fromObject(value as Record<string, unknown>)).finish()),
  deserialize: (type: protobufjs.Type, buffer: Buffer) => type.toObject(type.decode(buffer), criProtoLoaderOptions as protobufjs.IConversionOptions),
};
const codecName = (type: protobufjs.Type) => type.fullName.replace(/^\.runtime\.v1\./, '').replace(/\./g, '_');

/** JSON with Buffers spelled out: equal strings mean equal values and equal key order. */
const json = (value: unknown) =>
  JSON.stringify(value, function (this: unknown, _key, v) {
    return v && v.type === 'Buffer' && Array.isArray(v.data) ? `<buffer ${Buffer.from(v.data).toString('hex')}>` : v;
  });

// ---- sample objects ---------------------------------------------------------------------------------------------
let seed = 42;
const random = () => {
  // mulberry32: the same samples on every run.
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
const STRINGS = ['', 'a', 'nginx:1.25', 'héllo wörld', '日本語のラベル', 'emoji 🎉 pair', 'x'.repeat(39), 'y'.repeat(40), 'z'.repeat(300), 'ü'.repeat(70), 'lone \ud800 surrogate'];
const INT64 = [0, 1, 127, 128, 300, 2 ** 31, 2 ** 32 + 5, 2 ** 40, Number.MAX_SAFE_INTEGER, -1, -2, -(2 ** 33), 1.7e9 * 1e9];
const UINT64 = [0, 1, 127, 128, 2 ** 32, 2 ** 45 + 3, Number.MAX_SAFE_INTEGER, 1.8e19];

function scalar(field: protobufjs.Field, mode: 'random' | 'default' | 'loose'): unknown {
  switch (field.type) {
    case 'string':
      return mode === 'default' ? '' : mode === 'loose' && random() < 0.3 ? pick([42, true]) : pick(STRINGS);
    case 'bool':
      return mode === 'default' ? false : mode === 'loose' && random() < 0.3 ? pick([0, 1, 'yes', '']) : random() < 0.5;
    case 'int32':
      return mode === 'default' ? 0 : pick([1, 5, 127, 128, -1, -100, 2 ** 31 - 1, -(2 ** 31), ...(mode === 'loose' ? [2 ** 32 + 7, 3.9, '12'] : [])]);
    case 'uint32':
      return mode === 'default' ? 0 : pick([1, 127, 128, 2 ** 32 - 1, 65536, ...(mode === 'loose' ? [-1, 2 ** 33, '9'] : [])]);
    case 'int64':
      return mode === 'default' ? 0 : mode === 'loose' && random() < 0.4 ? pick(['123456789012345678', '-5', 2 ** 70, -(2 ** 70), 0.5, -0.5, -1.5e10, NaN, Infinity, -Infinity, 2 ** 63, -(2 ** 63), 2 ** 63 - 1024, 1.7e18 + 0.5, -1.7e18, 10n, -10n]) : pick(INT64);
    case 'uint64':
      return mode === 'default' ? 0 : mode === 'loose' && random() < 0.4 ? pick(['18446744073709551615', -7, 2 ** 66, 2 ** 64, 2 ** 64 - 4096, 2 ** 63, NaN, Infinity, -Infinity, 12.9, 10n]) : pick(UINT64);
    case 'bytes':
      return mode === 'default'
        ? Buffer.alloc(0)
        : mode === 'loose' && random() < 0.4
          ? pick(['aGVsbG8=', [1, 2, 3, 255], new Uint8Array([9, 8, 7])])
          : pick([Buffer.from('hello'), Buffer.alloc(200, 7), Buffer.from([0, 255, 128])]);
    default:
      throw new Error(`no sample for ${field.type}`);
  }
}

function value(field: protobufjs.Field, mode: 'random' | 'default' | 'loose', depth: number): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) {
    const names = Object.keys(resolved.values);
    if (mode === 'default') return names[0];
    if (mode === 'loose') return pick([...names, resolved.values[names[names.length - 1]], 99, 'NOT_A_VALUE']);
    return pick(names);
  }
  if (resolved instanceof protobuf.Type) return sample(resolved, mode, depth + 1);
  return scalar(field, mode);
}

/** An object for `type`: each field set with probability `fill` (every field for a full sample). */
function sample(type: protobufjs.Type, mode: 'random' | 'default' | 'loose', depth = 0, fill = 0.7): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  if (depth > 6) return object;
  for (const field of type.fieldsArray) {
    field.resolve();
    if (random() > fill) {
      if (mode === 'loose' && random() < 0.2) object[field.name] = pick([null, undefined]);
      continue;
    }
    if (field.map) {
      const entries = mode === 'default' ? 0 : Math.floor(random() * 4);
      const map: Record<string, unknown> = {};
      for (let i = 0; i < entries; i++) map[pick(['app', 'io.kubernetes.pod.name', 'ключ', '10', '2', `k${i}`, ''])] = scalar(field, mode === 'loose' ? 'loose' : 'random');
      object[field.name] = map;
    } else if (field.repeated) {
      const count = mode === 'default' ? 0 : Math.floor(random() * 4);
      object[field.name] = Array.from({ length: count }, () => value(field, mode === 'loose' ? 'random' : mode, depth));
    } else {
      object[field.name] = value(field, mode, depth);
    }
  }
  return object;
}

function check(t: Test, type: protobufjs.Type, input: unknown, what: string) {
  const ours = codec.messages[codecName(type)];
  let expected: Buffer;
  try {
    expected = loader.serialize(type, input);
  } catch (error) {
    // proto-loader refuses it: so must we, with the same message.
    t.throws(() => ours.serialize(input), { message: (error as Error).message }, `${type.name} ${what}: refused as proto-loader refuses it`);
    return;
  }
  const got = ours.serialize(input);
  if (!got.equals(expected)) {
    t.fail(`${type.name} ${what}: bytes differ`, { input: json(input), expected: expected.toString('hex'), got: got.toString('hex') });
    return;
  }
  const decodedExpected = loader.deserialize(type, expected);
  const decoded = ours.deserialize(expected);
  deepStrictEqual(decoded, decodedExpected, `${type.name} ${what}: decoded objects differ`);
  if (json(decoded) !== json(decodedExpected)) t.fail(`${type.name} ${what}: key order differs`, { expected: json(decodedExpected), got: json(decoded) });
}

t.test('every message: same bytes and same objects as proto-loader', async (t) => {
  t.ok(types.length > 100, `${types.length} message types`);
  t.same(Object.keys(codec.messages).sort(), types.map(codecName).sort(), 'a codec for every message');
  for (const type of types) {
    check(t, type, {}, 'empty');
    check(t, type, sample(type, 'random', 0, 1), 'every field set');
    check(t, type, sample(type, 'default', 0, 1), 'every field set to its default');
    for (let i = 0; i < 25; i++) check(t, type, sample(type, 'random'), `random #${i}`);
    for (let i = 0; i < 25; i++) check(t, type, sample(type, 'loose'), `loose input #${i}`);
  }
  t.pass('compared');
});

t.test('inputs proto-loader refuses are refused alike', async (t) => {
  const type = root.lookupType('runtime.v1.RunPodSandboxRequest');
  const bad: unknown[] = [
    null,
    'config',
    { config: 'not an object' },
    { config: { labels: 'x' } },
    { config: { portMappings: {} } },
    { config: { portMappings: [null] } },
    { config: { linux: { securityContext: { supplementalGroups: 7 } } } },
  ];
  for (const input of bad) check(t, type, input, `bad ${json(input)}`);
  // A message without fields takes anything, as fromObject does.
  check(t, root.lookupType('runtime.v1.RuntimeConfigRequest'), undefined, 'undefined for an empty message');
});

/** Appends unknown fields of every wire type (a newer runtime's) to a message's bytes. */
function withUnknownFields(bytes: Buffer): Buffer {
  const writer = protobuf.Writer.create();
  writer.uint32((1000 << 3) | 0).uint64(123456789);
  writer.uint32((1001 << 3) | 1).fixed64(42);
  writer.uint32((1002 << 3) | 2).string('from a newer runtime');
  writer.uint32((1003 << 3) | 3).uint32((1 << 3) | 0).uint32(5).uint32((1003 << 3) | 4);
  writer.uint32((1004 << 3) | 5).fixed32(7);
  return Buffer.concat([bytes, Buffer.from(writer.finish())]);
}

t.test('unknown fields from a newer runtime are skipped, also inside nested messages and map entries', async (t) => {
  for (const type of types) {
    const input = sample(type, 'random', 0, 1);
    const bytes = loader.serialize(type, input);
    const extended = withUnknownFields(bytes);
    deepStrictEqual(codec.messages[codecName(type)].deserialize(extended), loader.deserialize(type, bytes), type.name);
  }
  // Nested: an unknown field inside the ContainerStatus of a ContainerStatusResponse, and inside a label entry.
  const status = root.lookupType('runtime.v1.ContainerStatus');
  const nested = withUnknownFields(loader.serialize(status, { id: 'c1', state: 'CONTAINER_RUNNING', labels: { a: 'b' } }));
  const entry = withUnknownFields(Buffer.from(protobuf.Writer.create().uint32(10).string('k').uint32(18).string('v').finish()));
  const response = Buffer.concat([
    Buffer.from(protobuf.Writer.create().uint32(10).bytes(nested).finish()),
    Buffer.from(protobuf.Writer.create().uint32(18).bytes(entry).finish()),
  ]);
  const decoded = codec.messages.ContainerStatusResponse.deserialize(response);
  t.match(decoded.status, { id: 'c1', state: 'CONTAINER_RUNNING', labels: { a: 'b' } });
  t.same(decoded.info, { k: 'v' });
  deepStrictEqual(decoded, loader.deserialize(root.lookupType('runtime.v1.ContainerStatusResponse'), response));
});

t.test('enum values unknown to us decode to their number, as proto-loader decodes them', async (t) => {
  const type = root.lookupType('runtime.v1.ContainerStatus');
  const bytes = loader.serialize(type, { id: 'c', state: 42 });
  t.equal(codec.messages.ContainerStatus.deserialize(bytes).state, 42);
  t.equal(loader.deserialize(type, bytes).state, 42);
  t.same(codec.messages.ContainerStatus.serialize({ id: 'c', state: 42 }), bytes, 'and encode back to the same bytes');
});

t.test('packed and unpacked repeated numbers both decode', async (t) => {
  const type = root.lookupType('runtime.v1.LinuxContainerUser');
  // supplemental_groups (3) unpacked, as an older encoder may write it.
  const unpacked = Buffer.from(protobuf.Writer.create().uint32(24).int64(5).uint32(24).int64(-6).finish());
  t.same(codec.messages.LinuxContainerUser.deserialize(unpacked).supplementalGroups, [5, -6]);
  deepStrictEqual(codec.messages.LinuxContainerUser.deserialize(unpacked), loader.deserialize(type, unpacked));
});

t.test('truncated messages fail to decode, as with proto-loader', async (t) => {
  const type = root.lookupType('runtime.v1.ContainerStatusResponse');
  const bytes = loader.serialize(type, { status: { id: 'c'.repeat(50), metadata: { name: 'n' } } });
  for (const cut of [1, 2, 10, bytes.length - 1]) {
    t.throws(() => loader.deserialize(type, bytes.subarray(0, cut)), `proto-loader refuses ${cut} bytes`);
    t.throws(() => codec.messages.ContainerStatusResponse.deserialize(bytes.subarray(0, cut)), `codec refuses ${cut} bytes`);
  }
});

t.test('the service definitions match proto-loader’s, with the codec in them', async (t) => {
  const loaded = loadCriPackage() as unknown as Record<string, { service: Record<string, protoLoader.MethodDefinition<unknown, unknown>> }>;
  const ours = loadCriServices() as unknown as Record<string, { service: Record<string, protoLoader.MethodDefinition<unknown, unknown>> }>;
  for (const service of ['RuntimeService', 'ImageService']) {
    const theirs = loaded[service].service;
    const mine = ours[service].service;
    t.same(Object.keys(mine), Object.keys(theirs), `${service}: the same methods`);
    for (const [name, method] of Object.entries(theirs)) {
      const own = mine[name];
      t.same(
        { path: own.path, requestStream: own.requestStream, responseStream: own.responseStream, originalName: own.originalName },
        { path: method.path, requestStream: method.requestStream, responseStream: method.responseStream, originalName: method.originalName },
        `${service}/${name}`,
      );
      // The method's own request and response, through both definitions.
      const request = sample(root.lookupType((method.requestType.type as { name: string }).name), 'random', 0, 1);
      const response = sample(root.lookupType((method.responseType.type as { name: string }).name), 'random', 0, 1);
      t.same(own.requestSerialize(request), method.requestSerialize(request), `${name} request bytes`);
      t.same(own.responseSerialize(response), method.responseSerialize(response), `${name} response bytes`);
      const responseBytes = method.responseSerialize(response);
      deepStrictEqual(own.responseDeserialize(responseBytes), method.responseDeserialize(responseBytes), `${name} response object`);
      const requestBytes = method.requestSerialize(request);
      deepStrictEqual(own.requestDeserialize(requestBytes), method.requestDeserialize(requestBytes), `${name} request object`);
    }
  }
});

t.test('a message larger than the scratch buffer, and one after it', async (t) => {
  const type = root.lookupType('runtime.v1.ListContainersResponse');
  const big = {
    containers: Array.from({ length: 3000 }, (_, i) => ({
      id: `${i}`.repeat(64).slice(0, 64),
      podSandboxId: 's'.repeat(64),
      metadata: { name: `c${i}`, attempt: i },
      image: { image: 'registry.k8s.io/pause:3.10', annotations: { a: 'b'.repeat(200) } },
      state: 'CONTAINER_RUNNING',
      createdAt: 1.7e18 + i,
      labels: { 'io.kubernetes.pod.name': `pod-${i}` },
    })),
  };
  const bytes = codec.messages.ListContainersResponse.serialize(big);
  t.ok(bytes.length > 1024 * 1024, `${bytes.length} bytes`);
  t.ok(bytes.equals(loader.serialize(type, big)), 'same bytes');
  const small = codec.messages.VersionRequest.serialize({ version: 'v1' });
  t.same(small, loader.serialize(root.lookupType('runtime.v1.VersionRequest'), { version: 'v1' }));
});
