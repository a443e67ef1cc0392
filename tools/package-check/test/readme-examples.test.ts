import t from 'tap';
import { extractReadmeExamples } from '../src/index.js';

t.test('only ```ts example fences are examples, with their imports', async (t) => {
  const md = [
    '# pkg',
    '```ts',
    "import { outline } from '@x/a';",
    '```',
    '```ts example',
    "import { a } from '@x/a';",
    "import { b } from '@x/b/testing';",
    "import { readFile } from 'node:fs/promises';",
    'console.log(a, b, readFile);',
    '```',
    '- a list item with an indented example:',
    '  ~~~typescript example',
    "  import yaml from 'yaml';",
    '  ~~~',
  ].join('\n');
  const examples = extractReadmeExamples(md);
  t.same(examples.map((e) => e.line), [5, 12]);
  t.same(examples[0].packages, ['@x/a', '@x/b']);
  t.equal(examples[0].code, "import { a } from '@x/a';\nimport { b } from '@x/b/testing';\nimport { readFile } from 'node:fs/promises';\nconsole.log(a, b, readFile);\n");
  t.same(examples[1], { line: 12, code: "import yaml from 'yaml';\n", packages: ['yaml'] });
});

t.test('an unclosed fence is an error naming its line', async (t) => {
  t.throws(() => extractReadmeExamples('text\n```ts example\nconst a = 1;\n'), /line 2: the code fence is never closed/);
});
