// A release as CI would make it, without writing to any registry: `changeset version` on a copy of the workspace
// consumes the pending changesets, bumps versions, rewrites the internal dependency ranges and writes the CHANGELOGs;
// then `npm publish --dry-run` (what `changeset publish` runs for each package, which has no dry run of its own).
import t from 'tap';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lintDependencies, listWorkspace, run, toolEntry } from '../src/index.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const copy = mkdtempSync(join(tmpdir(), 'kubelet-ts-release-'));
process.on('exit', () => rmSync(copy, { recursive: true, force: true }));

const skip = new Set(['node_modules', '.tap', 'test', 'bench', 'src', '.nx']);
cpSync(join(root, 'package.json'), join(copy, 'package.json'));
cpSync(join(root, '.changeset'), join(copy, '.changeset'), { recursive: true });
const before = listWorkspace(root);
for (const pkg of before.packages) {
  cpSync(pkg.dir, join(copy, pkg.path), { recursive: true, filter: (src) => !skip.has(src.slice(pkg.dir.length + 1).split('/')[0]) });
}
const pending = readdirSync(join(root, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
const changesetCli = toolEntry('@changesets/cli', 'changeset');

t.test('changeset version', async (t) => {
  const git = await run('git', ['init', '-q'], { cwd: copy });
  t.equal(git.code, 0, 'the copy is a git repository, as changesets expects');
  const versioned = await run(process.execPath, [changesetCli, 'version'], { cwd: copy });
  t.equal(versioned.code, 0, `changeset version consumes the ${pending.length} pending changesets`, { output: versioned.stdout + versioned.stderr });
  t.same(
    readdirSync(join(copy, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md'),
    [],
    'no changeset is left pending',
  );
  t.same(lintDependencies(copy), [], 'every internal dependency range now names the new version, and lint-deps passes');

  for (const pkg of before.packages.filter((p) => !p.manifest.private)) {
    const after = JSON.parse(readFileSync(join(copy, pkg.path, 'package.json'), 'utf8')) as { version: string };
    const changelogPath = join(copy, pkg.path, 'CHANGELOG.md');
    if (after.version === pkg.manifest.version) {
      t.notOk(pending.some((f) => readFileSync(join(root, '.changeset', f), 'utf8').includes(`"${pkg.manifest.name}"`)), `${pkg.manifest.name} has no changeset and is not released`);
      continue;
    }
    const changelog = readFileSync(changelogPath, 'utf8');
    t.match(changelog, new RegExp(`^# ${pkg.manifest.name.replace('/', '\\/')}\\n\\n## ${after.version.replace(/\./g, '\\.')}\\n`), `${pkg.manifest.name} ${pkg.manifest.version} -> ${after.version} has a CHANGELOG entry`);
    const entry = changelog.split(/\n## /)[1] ?? '';
    t.match(entry, /### (Major|Minor|Patch) Changes\n\n- /, `${pkg.manifest.name}'s entry lists its changes`);
    t.notMatch(entry, /^(- .+)\n\1$/m, `${pkg.manifest.name}'s entry repeats no line`);
    t.notMatch(entry, /\b[0-9a-f]{7}: /, `${pkg.manifest.name}'s entry carries no commit hashes`);
  }
});

t.test('npm publish --dry-run', async (t) => {
  const published = before.packages.filter((p) => !p.manifest.private);
  const args = ['publish', '--dry-run', '--access', 'public', ...published.flatMap((p) => ['--workspace', p.path])];
  const result = await run('npm', args, { cwd: copy });
  t.equal(result.code, 0, 'npm publish --dry-run succeeds for every published package', { stderr: result.stderr.slice(-4000) });
  for (const pkg of published) {
    const version = (JSON.parse(readFileSync(join(copy, pkg.path, 'package.json'), 'utf8')) as { version: string }).version;
    t.ok(result.stdout.includes(`+ ${pkg.manifest.name}@${version}`), `${pkg.manifest.name}@${version} would be published`);
  }
  t.notOk(result.stdout.includes('@kubelet-ts/kubelet@'), 'the kubelet app (private) would not be published');
});
