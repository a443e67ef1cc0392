import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Dependency direction from DESIGN.md, enforced on nx tags:
// core <- cri-client <- runtime-manager <- component packages <- apps/kubelet.
// tools and tests may use anything published.
function moduleBoundaries(testCode) {
  // Tests and benchmarks may also use the private test tools (test API server, CRI conformance suite).
  const tools = testCode ? ['type:tool'] : [];
  return {
    enforceBuildableLibDependency: true,
    allow: [],
    depConstraints: [
      { sourceTag: 'layer:core', onlyDependOnLibsWithTags: ['layer:core', ...tools] },
      { sourceTag: 'layer:cri', onlyDependOnLibsWithTags: ['layer:core', 'layer:cri', ...tools] },
      { sourceTag: 'layer:runtime', onlyDependOnLibsWithTags: ['layer:core', 'layer:cri', 'layer:runtime', ...tools] },
      {
        sourceTag: 'layer:component',
        onlyDependOnLibsWithTags: ['layer:core', 'layer:cri', 'layer:runtime', 'layer:component', ...tools],
      },
      { sourceTag: 'type:lib', notDependOnLibsWithTags: ['type:app'] },
      { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib', ...tools] },
      { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:lib', 'type:tool'] },
    ],
  };
}

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.tap/**', '**/generated/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@nx/enforce-module-boundaries': ['error', moduleBoundaries(false)],
      // A package's internals are not its API: import other packages by name and public subpaths only.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@kubelet-ts/*/src/*', '@kubelet-ts/*/dist/*', '**/packages/*/src/*', '**/apps/*/src/*', '../../*/src/*'],
              message: 'Import another package by its name (and its ./testing subpath), never its internals.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/test/**/*.ts', '**/bench/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': ['error', moduleBoundaries(true)] },
  },
);
