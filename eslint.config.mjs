// Lint for the TypeScript of packages/, services/, tests/ and bench/ (issue #21): typescript-eslint with type
// information for the promise rules, plus the architecture's own rules (design.md §2) as restrictions.
// Run: npm run lint (also part of npm test).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The after-commit event senders of @teamchat/bus's EventBus (packages/bus/src/events.ts).
const outboxSenders = ['sendEventOnCommit', 'outboxWrite'];
const noIoredis = { name: 'ioredis', message: 'Redis goes through @teamchat/bus (createRedis, type Redis).' };
const noServiceFromPackage = {
  regex: '^@teamchat/service-|^(\\.\\./)+services/',
  message: 'A package never imports a service (only @teamchat/stack, the test stack above them, does).',
};

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', 'packages/db/src/generated/**', 'var/**', 'tmp-probe/**'],
  },
  {
    files: ['{packages,services,tests,bench}/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: {
      // One program for the whole tree (the root tsconfig covers every linted file): projectService
      // built one per file's nearest tsconfig and took 52 s cold.
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      // The code's convention (as tsc's noUnusedLocals): a leading _ names what is left out on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  // Test code reads arbitrary JSON answers and pokes at internals: `any` is allowed there, not in the product.
  {
    files: ['tests/**/*.ts', 'bench/**/*.ts', '{packages,services}/*/test/**/*.ts', 'packages/testing/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  // Architecture: ioredis only through packages/bus (createRedis, the Redis type), never directly;
  // a service never imports another service (by package name, or by a path into a sibling's src/).
  // Tests may open raw connections (to play a zombie client or an unreachable Redis).
  // Packages sit below the services: none imports one, except @teamchat/stack, the in-process test
  // stack that only tests and benches depend on (so packages/testing, which services' tests import,
  // makes no package cycle npm cannot see).
  {
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/bus/src/**', 'packages/stack/src/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [noIoredis], patterns: [noServiceFromPackage] }] },
  },
  {
    files: ['packages/bus/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noServiceFromPackage] }] },
  },
  {
    files: ['packages/stack/src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [noIoredis] }] },
  },
  {
    files: ['services/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [noIoredis],
          patterns: [
            {
              regex: '^@teamchat/service-|^(\\.\\./)+(services/)?[^./][^/]*/src(/|$)',
              message: 'A service never imports another service: share through packages/*, the database or the bus.',
            },
          ],
        },
      ],
    },
  },
  // Architecture: events are sent after commit only by actions (design.md §2: "the action that changes state
  // is the one place that sends its events"). The worker's jobs are its actions (batches, each its own
  // transaction, each sending its events: design.md §5).
  {
    files: ['{packages,services}/*/src/**/*.ts'],
    ignores: ['packages/bus/src/**', 'services/*/src/actions/**', 'services/worker/src/jobs/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...outboxSenders.map((name) => ({
          selector: `CallExpression[callee.property.name='${name}']`,
          message: `${name} (events after commit) is called only in services/*/src/actions/**.`,
        })),
      ],
    },
  },
);
