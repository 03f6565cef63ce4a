// Settings are validated at boot, every problem reported at once; LOG_LEVEL among them (a
// misspelt level made pino throw when the first logger was made).
import pino from 'pino';
import { commonEnv, env, EnvError, loadEnv, LOG_LEVELS } from '../src/env';

const base = { DATABASE_URL: 'postgresql://u@h/db', INTERNAL_JWT_SECRET: 'x'.repeat(32) };

test('LOG_LEVEL: a level pino knows, info by default; anything else refused at boot with the others', () => {
  expect(loadEnv(commonEnv, base).LOG_LEVEL).toBe('info');
  expect(loadEnv(commonEnv, { ...base, LOG_LEVEL: 'debug' }).LOG_LEVEL).toBe('debug');
  expect(() => loadEnv(commonEnv, { ...base, LOG_LEVEL: 'verbose', REDIS_WAIT_REPLICAS: 'one' })).toThrow(EnvError);
  try {
    loadEnv(commonEnv, { ...base, LOG_LEVEL: 'verbose', REDIS_WAIT_REPLICAS: 'one' });
  } catch (error) {
    expect((error as Error).message).toMatch(
      /LOG_LEVEL is invalid: not one of fatal, error, warn, info, debug, trace, silent/,
    );
    expect((error as Error).message).toMatch(/REDIS_WAIT_REPLICAS is invalid/);
  }
  // The list is pino's own: each is accepted by pino, and pino refuses what the list refuses.
  for (const level of LOG_LEVELS) expect(() => pino({ level })).not.toThrow();
  expect(() => pino({ level: 'verbose' })).toThrow();
});

test('oneOf: exact words only', () => {
  const spec = { MODE: env.oneOf('a mode', ['a', 'b'] as const, 'a') };
  expect(loadEnv(spec, {}).MODE).toBe('a');
  expect(loadEnv(spec, { MODE: 'b' }).MODE).toBe('b');
  expect(() => loadEnv(spec, { MODE: 'B' })).toThrow(/MODE is invalid: not one of a, b/);
});
