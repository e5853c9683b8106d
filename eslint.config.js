// eslint (typescript-eslint's recommended rules) over the TypeScript sources, tests and bench.
// Formatting is prettier's (`npm run format`), not eslint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'dist-bench/', 'node_modules/', 'test/golden/', 'test/fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { URL: 'readonly', process: 'readonly', console: 'readonly' } },
  },
  {
    rules: {
      // Text from a host is hostile: the code strips and tests control characters on purpose.
      'no-control-regex': 'off',
      // `_name` marks a parameter or binding kept for its position or its type.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
);
