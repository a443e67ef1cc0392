// Go's two-way strategic merge patch, independent of any one kind's schema (node-status and
// status-manager test theirs).
import t from 'tap';
import { applyStrategicMergePatch, createTwoWayMergePatch, type JsonObject, type PatchSchema } from '../src/index.js';

t.test('two-way merge patch: removed keys become null, removed list elements $patch: delete, atomic lists whole', async (t) => {
  const schema = { list: { mergeKey: 'name' } };
  const patch = createTwoWayMergePatch(
    { a: 1, gone: 'x', list: [{ name: 'p', v: 1 }, { name: 'q', v: 2 }], atomic: [1, 2], nested: { keep: 1, drop: 2 } },
    { a: 1, list: [{ name: 'q', v: 2 }], atomic: [1, 3], nested: { keep: 1 } },
    schema,
  );
  t.same(patch, {
    '$setElementOrder/list': [{ name: 'q' }],
    atomic: [1, 3],
    gone: null,
    list: [{ name: 'p', $patch: 'delete' }],
    nested: { drop: null },
  });
  t.same(createTwoWayMergePatch({ a: [{ name: 'x' }] }, { a: [{ name: 'x' }] }, { a: { mergeKey: 'name' } }), {}, 'no change: empty patch');
  t.same(
    createTwoWayMergePatch({ a: [{ name: 'x' }, { name: 'y' }] }, { a: [{ name: 'y' }, { name: 'x' }] }, { a: { mergeKey: 'name' } }),
    { '$setElementOrder/a': [{ name: 'y' }, { name: 'x' }] },
    'order change only',
  );
});

t.test('the patch text has Go\'s key order, nested keys and list elements too', async (t) => {
  const schema: PatchSchema = { status: { fields: { conditions: { mergeKey: 'type' } } } };
  const patch = createTwoWayMergePatch(
    { status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False', reason: 'x' }] } },
    { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], zeta: { b: 1, a: 2 } } },
    schema,
  );
  t.equal(
    JSON.stringify(patch),
    '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"reason":null,"status":"True","type":"Ready"}],"phase":"Running","zeta":{"a":2,"b":1}}}',
  );
});

t.test('nested schemas: merge keys of lists inside merged list elements', async (t) => {
  const schema: PatchSchema = { items: { mergeKey: 'name', fields: { ports: { mergeKey: 'port' } } } };
  const original = { items: [{ name: 'a', ports: [{ port: 1, proto: 'TCP' }, { port: 2, proto: 'TCP' }] }] };
  const modified = { items: [{ name: 'a', ports: [{ port: 1, proto: 'TCP' }, { port: 2, proto: 'UDP' }] }] };
  const patch = createTwoWayMergePatch(original, modified, schema);
  t.same(patch, {
    '$setElementOrder/items': [{ name: 'a' }],
    items: [{ '$setElementOrder/ports': [{ port: 1 }, { port: 2 }], name: 'a', ports: [{ port: 2, proto: 'UDP' }] }],
  });
  t.same(applyStrategicMergePatch(original, patch, schema), modified);
});

t.test('apply: nulls delete, maps merge, keyed lists follow $setElementOrder, $patch: replace replaces', async (t) => {
  const schema: PatchSchema = { list: { mergeKey: 'k' } };
  const original: JsonObject = { keep: 1, drop: 2, map: { a: 1, b: 2 }, list: [{ k: 'x', v: 1 }, { k: 'y', v: 2 }, { k: 'z', v: 3 }], atomic: [1, 2] };
  const patch: JsonObject = {
    drop: null,
    map: { b: null, c: 3 },
    '$setElementOrder/list': [{ k: 'z' }, { k: 'x' }, { k: 'w' }],
    list: [{ k: 'y', $patch: 'delete' }, { k: 'x', v: 10 }, { k: 'w', v: 0 }],
    atomic: [3],
  };
  const before = structuredClone(original);
  const applied = applyStrategicMergePatch(original, patch, schema);
  t.same(applied, { keep: 1, map: { a: 1, c: 3 }, list: [{ k: 'z', v: 3 }, { k: 'x', v: 10 }, { k: 'w', v: 0 }], atomic: [3] });
  t.same(original, before, 'the original is not changed');
  (applied.list as JsonObject[])[2].v = 99;
  t.same((patch.list as JsonObject[])[2], { k: 'w', v: 0 }, 'the result shares nothing with the patch');
  t.same(applyStrategicMergePatch(original, { list: [{ k: 'n' }, { $patch: 'replace' }] }, schema).list, [{ k: 'n' }], 'replace');
});

t.test('a patch applied to the original gives the modified object', async (t) => {
  const schema: PatchSchema = { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } };
  const original: JsonObject = {
    conditions: [{ type: 'A', status: 'True' }, { type: 'B', status: 'False', message: 'm' }],
    addresses: [{ type: 'X', address: '1' }],
    capacity: { cpu: '4' },
  };
  const modified: JsonObject = {
    conditions: [{ type: 'C', status: 'True' }, { type: 'B', status: 'True' }],
    addresses: [{ type: 'X', address: '1' }],
    capacity: { cpu: '8', memory: '1Gi' },
  };
  t.same(applyStrategicMergePatch(original, createTwoWayMergePatch(original, modified, schema), schema), modified);
});
