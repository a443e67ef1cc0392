import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Dependency direction from DESIGN.md, enforced on nx tags:
// core <- cri-client <- runtime-manager <- component packages <- apps/kubelet.
// tools and tests may use anything published.
export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.tap/**', '**/generated/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allow: [],
          depConstraints: [
            { sourceTag: 'layer:core', onlyDependOnLibsWithTags: ['layer:core'] },
            { sourceTag: 'layer:cri', onlyDependOnLibsWithTags: ['layer:core', 'layer:cri'] },
            { sourceTag: 'layer:runtime', onlyDependOnLibsWithTags: ['layer:core', 'layer:cri', 'layer:runtime'] },
            {
              sourceTag: 'layer:component',
              onlyDependOnLibsWithTags: ['layer:core', 'layer:cri', 'layer:runtime', 'layer:component'],
            },
            { sourceTag: 'type:lib', notDependOnLibsWithTags: ['type:app'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:lib'] },
          ],
        },
      ],
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
);
