import t from 'tap';
import { extractInstallLine, extractReadmeExamples, readmeStructure, TYPEDOC_SITE } from '../src/index.js';

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

t.test('the install line is the first npm install in a shell fence', async (t) => {
  const md = [
    '# pkg',
    '```ts',
    "// npm install not-this-one (a ts fence)",
    '```',
    '```sh',
    '# a comment',
    'npm install @x/a @x/b@^1.2.0 yaml@2 --save',
    '```',
    '```bash',
    'npm install @x/later',
    '```',
  ].join('\n');
  t.same(extractInstallLine(md), { line: 7, packages: ['@x/a', '@x/b', 'yaml'] });
  t.same(extractInstallLine('```bash\n$ npm i @x/a\n```\n'), { line: 2, packages: ['@x/a'] });
  t.equal(extractInstallLine('npm install @x/a (in prose, not a fence)\n'), undefined);
  t.equal(extractInstallLine('```sh\nnpm test\n```\n'), undefined);
});

t.test('readmeStructure finds the install line, the ESM statement, the typedoc link and an API table', async (t) => {
  const complete = [
    '# pkg',
    '```sh',
    'npm install @x/a',
    '```',
    '',
    'ESM only: `import` it from Node.js 20.18 or newer. API reference:',
    `<${TYPEDOC_SITE}>.`,
    '',
    '## API',
    '',
    '| export | what it is |',
    '|---|---|',
    '| `A` | a class |',
  ].join('\n');
  t.same(readmeStructure(complete), { installLine: true, esmForNode: true, typedocLink: true, apiTable: true });
  t.same(readmeStructure('# pkg\n\nAn ES module.\n\nNode 20.18+.\n'), { installLine: false, esmForNode: false, typedocLink: false, apiTable: false }, 'ESM and 20.18 in different paragraphs do not count');
  t.same(readmeStructure('The package is an ES module for Node 20.18+.\n').esmForNode, true);
  const inFences = ['```md', '| a | b |', '|---|---|', `${TYPEDOC_SITE}`, '```'].join('\n');
  t.same(readmeStructure(inFences), { installLine: false, esmForNode: false, typedocLink: false, apiTable: false }, 'a table or a link inside a code fence does not count');
  t.equal(readmeStructure('| a | b |\n| :-- | --: |\n').apiTable, true, 'aligned separators');
});
