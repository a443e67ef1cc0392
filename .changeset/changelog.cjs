// CHANGELOG lines for users of the packages: the changeset's text as written (no commit hashes, which mean nothing
// on npm), and one line naming the new versions of the @kubelet-ts packages a release moved to, instead of the
// default's "Updated dependencies" repeated once per changeset.

/** @type {import('@changesets/types').ChangelogFunctions['getReleaseLine']} */
async function getReleaseLine(changeset) {
  const [first, ...rest] = changeset.summary.trim().split('\n').map((line) => line.trimEnd());
  return [`- ${first}`, ...rest.map((line) => (line ? `  ${line}` : ''))].join('\n');
}

/** @type {import('@changesets/types').ChangelogFunctions['getDependencyReleaseLine']} */
async function getDependencyReleaseLine(_changesets, dependenciesUpdated) {
  if (dependenciesUpdated.length === 0) return '';
  const versions = dependenciesUpdated.map((dep) => `\`${dep.name}\` ${dep.newVersion}`).join(', ');
  return `- Uses ${versions}.`;
}

module.exports = { getReleaseLine, getDependencyReleaseLine };
