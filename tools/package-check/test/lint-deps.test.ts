import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importedSpecifiers, lintDependencies, packageNameOf } from '../src/index.js';

function workspace(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lint-deps-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const rootManifest = { name: 'repo', version: '0.0.0', private: true, workspaces: ['packages/*', 'tools/one'] };

t.test('a consistent workspace has no problem', async (t) => {
  const dir = workspace({
    'package.json': rootManifest,
    'packages/a/package.json': { name: '@x/a', version: '1.2.0', dependencies: { yaml: '^2.0.0' } },
    'packages/a/src/index.ts': "import { parse } from 'yaml';\nimport { readFile } from 'node:fs';\nimport './local.js';\n",
    'packages/b/package.json': { name: '@x/b', version: '0.3.1', dependencies: { '@x/a': '^1.2.0', yaml: '^2.0.0' } },
    'packages/b/src/index.ts': "export * from '@x/a';\nexport type { T } from '@x/b/testing';\nconst fs = await import('fs');\n",
    'tools/one/package.json': { name: 'one', version: '0.0.0', private: true, devDependencies: { '@x/b': '^0.3.1' } },
  });
  t.same(lintDependencies(dir), []);
});

t.test('open ranges, the workspace protocol and stale internal ranges are named with their file and field', async (t) => {
  const dir = workspace({
    'package.json': rootManifest,
    'packages/a/package.json': { name: '@x/a', version: '1.2.0', dependencies: { yaml: '*' } },
    'packages/b/package.json': { name: '@x/b', version: '0.3.1', dependencies: { '@x/a': '^1.1.0' }, devDependencies: { tap: 'latest' } },
    'tools/one/package.json': { name: 'one', version: '0.0.0', private: true, devDependencies: { '@x/b': 'workspace:*' } },
  });
  t.same(
    lintDependencies(dir).map((p) => `${p.file}: ${p.message}`),
    [
      'packages/a/package.json: dependencies["yaml"] is "*": give a semver range',
      'packages/b/package.json: dependencies["@x/a"] is "^1.1.0" but @x/a is 1.2.0: use "^1.2.0"',
      'packages/b/package.json: devDependencies["tap"] is "latest": give a semver range',
      'tools/one/package.json: devDependencies["@x/b"] is "workspace:*": npm does not support the workspace: protocol; use "^<version>"',
    ],
  );
});

t.test('a third-party package with two ranges in the repo is drift', async (t) => {
  const dir = workspace({
    'package.json': { ...rootManifest, workspaces: ['packages/*'], devDependencies: { undici: '^7.0.0' } },
    'packages/a/package.json': { name: '@x/a', version: '1.0.0', dependencies: { undici: '^6.0.0' } },
  });
  t.same(lintDependencies(dir).map((p) => p.message), [
    'undici has 2 different ranges: "^7.0.0" in package.json devDependencies; "^6.0.0" in packages/a/package.json dependencies; use one',
  ]);
});

t.test("an import a published package does not declare is named with the source file; private packages are not checked", async (t) => {
  const dir = workspace({
    'package.json': rootManifest,
    'packages/a/package.json': { name: '@x/a', version: '1.0.0', devDependencies: { ws: '^8.0.0' } },
    'packages/a/src/deep/server.ts': "import type { WebSocket } from 'ws';\nimport { Agent } from 'undici/agent';\n",
    'tools/one/package.json': { name: 'one', version: '0.0.0', private: true },
    'tools/one/src/index.ts': "import 'anything';\n",
  });
  t.same(lintDependencies(dir).map((p) => `${p.file}: ${p.message}`), [
    'packages/a/src/deep/server.ts: imports "ws" but @x/a does not depend on ws (it is only a devDependency, which npm users do not get)',
    'packages/a/src/deep/server.ts: imports "undici/agent" but @x/a does not depend on undici',
  ]);
});

t.test('import specifiers and package names', async (t) => {
  t.same(
    importedSpecifiers("import a from 'a';\nexport { b } from \"@s/b/sub\";\nimport 'side';\nawait import('dyn');\nimport x from './rel.js';\n").sort(),
    ['@s/b/sub', 'a', 'dyn', 'side'],
  );
  t.equal(packageNameOf('@s/b/sub/path'), '@s/b');
  t.equal(packageNameOf('lodash/fp'), 'lodash');
});
