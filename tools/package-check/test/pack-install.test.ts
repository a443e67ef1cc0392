// Every published package as an npm user meets it: `npm pack`, installed from the tarballs (the @kubelet-ts packages
// are not on the registry; their third-party dependencies come from it) into an empty project outside the workspace,
// imported from ESM and from TypeScript (node16 and bundler resolution), checked by publint and arethetypeswrong,
// and the README's runnable examples (```ts example fences) run there with tsx.
//
// One project holds every tarball: an install and a TypeScript program per package would make this a quarter of an
// hour, most of it spent loading @kubernetes/client-node again. What one shared node_modules could hide, an import a
// package does not declare, is what lint-deps checks in every package's sources; `npm ls` checks the declared ones.
import t from 'tap';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import {
  extractReadmeExamples,
  type ReadmeExample,
  type WorkspacePackage,
  installConsumer,
  internalClosure,
  javascriptSubpaths,
  packPackages,
  publishedPackages,
  run,
  subpathSpecifier,
  tarballFiles,
  toolEntry,
  writeConsumerTsconfig,
  CONSUMER_TSCONFIGS,
} from '../src/index.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const rootManifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
// PACKAGE_CHECK_ONLY=core,cri-client narrows the run while working on a few packages.
const only = process.env.PACKAGE_CHECK_ONLY?.split(',').map((n) => (n.startsWith('@') ? n : `@kubelet-ts/${n}`));
const allPackages = publishedPackages(root);
const packages = only ? allPackages.filter((p) => only.includes(p.manifest.name)) : allPackages;
const byName = new Map(allPackages.map((p) => [p.manifest.name, p]));
const work = await mkdtemp(join(tmpdir(), 'kubelet-ts-pack-'));
// Not t.teardown: tap may run the root test's teardown while this file is still awaiting its set-up.
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

const tarballs = await packPackages(root, allPackages, join(work, 'tarballs'));
const tsc = toolEntry('typescript', 'tsc');
const tsx = toolEntry('tsx');
const attw = toolEntry('@arethetypeswrong/cli', 'attw');

t.equal(tarballs.size, allPackages.length, `npm pack made one tarball for each of the ${allPackages.length} published packages`);

const project = join(work, 'consumer');
const examplesByPackage = new Map<string, ReadmeExample[]>();
for (const pkg of packages) examplesByPackage.set(pkg.manifest.name, extractReadmeExamples(await readFile(join(pkg.dir, 'README.md'), 'utf8')));
const installed = internalClosure([...packages.map((p) => p.manifest.name), ...[...examplesByPackage.values()].flat().flatMap((e) => e.packages).filter((d) => byName.has(d))], byName);
const install = await installConsumer(
  project,
  installed.map((n) => tarballs.get(n) as string),
  { '@types/node': rootManifest.devDependencies['@types/node'] },
);
t.equal(install.code, 0, `npm install of ${installed.length} tarballs into an empty project succeeds`, { stderr: install.stderr });
if (install.code !== 0) process.exit(1);
const tree = await run('npm', ['ls', '--all', '--omit=dev'], { cwd: project });
t.equal(tree.code, 0, 'npm ls: every dependency of every package is installed at a version its range allows', { output: tree.stdout.slice(-3000) + tree.stderr });

const specifiersOf = (pkg: WorkspacePackage) => javascriptSubpaths(pkg.manifest.exports).map((s) => subpathSpecifier(pkg.manifest.name, s));
const exampleFile = (name: string, i: number) => `${name.replace('@kubelet-ts/', '')}.readme-example-${i + 1}.ts`;

// Every README example is written once, for tsc to check and tsx to run.
const exampleFiles: string[] = [];
for (const [name, examples] of examplesByPackage) {
  for (const [i, example] of examples.entries()) {
    await writeFile(join(project, exampleFile(name, i)), example.code);
    exampleFiles.push(exampleFile(name, i));
  }
}

t.test('TypeScript', async (t) => {
  const files = ['imports.ts', ...exampleFiles];
  let imports = '';
  for (const [i, spec] of packages.flatMap(specifiersOf).entries()) imports += `import * as m${i} from '${spec}';\nconsole.log(Object.keys(m${i}).length);\n`;
  await writeFile(join(project, 'imports.ts'), imports);
  for (const mode of Object.keys(CONSUMER_TSCONFIGS) as (keyof typeof CONSUMER_TSCONFIGS)[]) {
    const tsconfig = await writeConsumerTsconfig(project, mode, files);
    const checked = await run(process.execPath, [tsc, '-p', tsconfig], { cwd: project });
    t.equal(checked.code, 0, `moduleResolution ${mode}: every export subpath and every README example type-checks`, {
      output: checked.stdout + checked.stderr,
    });
  }
});

// Two packages at a time: most of each is waiting on a child process.
t.jobs = 2;
for (const pkg of packages) {
  const name = pkg.manifest.name;
  t.test(name, { buffered: true }, async (t) => {
    const tarball = tarballs.get(name) as string;
    const files = await tarballFiles(tarball);
    t.ok(files.includes('README.md'), 'the tarball has the README');
    t.notOk(
      files.some((f) => f.startsWith('src/') || f.startsWith('test/') || f.endsWith('.tsbuildinfo')),
      'the tarball holds no sources, tests or build state',
    );
    t.match(pkg.manifest.engines?.node ?? '', /\S/, 'package.json states the Node versions it supports (engines.node)');

    const examples = examplesByPackage.get(name) ?? [];
    t.ok(examples.length >= 2, `the README has runnable examples (a real one and one with ./testing): found ${examples.length}`);
    const exampleImports = new Set(examples.flatMap((e) => e.packages));
    // A third-party package an example imports must come with the @kubelet-ts packages it shows (as client-node does).
    const thirdParty = new Set(
      internalClosure([name, ...[...exampleImports].filter((d) => byName.has(d))], byName).flatMap((n) => {
        const m = (byName.get(n) as WorkspacePackage).manifest;
        return Object.keys({ ...m.dependencies, ...m.peerDependencies });
      }),
    );
    for (const dep of exampleImports) {
      t.ok(byName.has(dep) || thirdParty.has(dep), `README example import ${dep} is a @kubelet-ts package or a dependency of one it shows`);
    }

    const specifiers = specifiersOf(pkg);
    const imported = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `for (const spec of ${JSON.stringify(specifiers)}) { const m = await import(spec); if (Object.keys(m).length === 0) throw new Error(spec + ' has no exports'); }`,
      ],
      { cwd: project },
    );
    t.equal(imported.code, 0, `import() of ${specifiers.join(', ')} works from ESM`, { stderr: imported.stderr });

    const lint = await publint({ pack: { tarball: (await readFile(tarball)).buffer as ArrayBuffer }, level: 'suggestion', strict: true });
    t.same(
      lint.messages.map((m) => `${m.type}: ${formatMessage(m, lint.pkg) ?? m.code}`),
      [],
      'publint (strict, suggestions included) finds nothing',
    );

    const subpaths = javascriptSubpaths(pkg.manifest.exports);
    const assets = Object.keys(pkg.manifest.exports ?? {}).filter((s) => !subpaths.includes(s));
    const types = await run(
      process.execPath,
      [attw, tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', ...(assets.length ? ['--exclude-entrypoints', ...assets] : [])],
      { cwd: project },
    );
    t.equal(types.code, 0, `arethetypeswrong (esm-only profile) finds no problem${assets.length ? ` (assets not checked: ${assets.join(', ')})` : ''}`, {
      output: types.stdout + types.stderr,
    });

    for (const [i, example] of examples.entries()) {
      const file = exampleFile(name, i);
      const ran = await run(process.execPath, [tsx, file], { cwd: project, timeoutMs: 60_000 });
      t.equal(ran.code, 0, `README example at line ${example.line} runs from the installed tarballs`, {
        stdout: ran.stdout.slice(-2000),
        stderr: ran.stderr.slice(-4000),
      });
    }
  });
}
