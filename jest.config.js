// One jest run for the whole workspace. Unit tests are pure; integration tests talk to the real
// Postgres, Redis and the Kafka development broker that the global setup starts once per run.
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
};
const common = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };

module.exports = {
  // Global, not per project: jest ignores testTimeout inside a project entry.
  testTimeout: 60000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/{packages,services}/*/test/**/*.unit.test.ts',
        '<rootDir>/deploy/test/**/*.unit.test.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: [
        '<rootDir>/{packages,services}/*/test/**/*.int.test.ts',
        '<rootDir>/deploy/test/**/*.int.test.ts',
      ],
      globalSetup: '<rootDir>/packages/testing/src/global-setup.ts',
      globalTeardown: '<rootDir>/packages/testing/src/global-teardown.ts',
    },
  ],
};
