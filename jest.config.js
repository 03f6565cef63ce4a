/** One jest run over every package and service (API-level tests against real PostgreSQL and Redis). */
module.exports = {
  testEnvironment: 'node',
  // tests/: whole-system suites (fuzzing, permissions, isolation, faults) that belong to no one service.
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/tests'],
  testMatch: ['**/test/**/*.test.ts', '<rootDir>/tests/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
    // ESM-only npm packages (tus and its srvx adapter), compiled to CommonJS for jest's module registry.
    '^.+/node_modules/(@tus/[^/]+|srvx)/.+\\.m?js$': [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(@tus/[^/]+|srvx)/)'],
  globalSetup: '<rootDir>/packages/testing/src/global-setup.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ['<rootDir>/.*/dist/'],
};
