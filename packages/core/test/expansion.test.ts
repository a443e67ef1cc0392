// Go's expansion.Expand, case by case (third_party/forked/golang/expansion/expand_test.go).
import t from 'tap';
import { expand, expandAll } from '../src/index.js';

const env = new Map([
  ['A', 'x'],
  ['B', 'y'],
]);
const mapping = (name: string) => env.get(name);

t.test('references, escapes and what stays as written', async (t) => {
  t.equal(expand('$(A)-$(B)', mapping), 'x-y');
  t.equal(expand('$$(A)', mapping), '$(A)', '$$ is a literal $');
  t.equal(expand('$(C)', mapping), '$(C)', 'an unknown reference stays');
  t.equal(expand('$(A', mapping), '$(A', 'an unterminated reference stays');
  t.equal(expand('$(A $$B', mapping), '$(A $B', 'scanning goes on after an unterminated reference, as in Go');
  t.equal(expand('$(A $(B)', mapping), '$(A $(B)', 'a reference runs to the first closing parenthesis');
  t.equal(expand('cost: $5 and $', mapping), 'cost: $5 and $', 'a lone $ stays');
  t.equal(expand('$()', mapping), '$()', 'an empty name is unknown');
});

t.test('expandAll expands each value with the environment', async (t) => {
  t.same(expandAll(['$(A)', 'b-$(B)'], env), ['x', 'b-y']);
  t.same(expandAll(undefined, env), []);
});
