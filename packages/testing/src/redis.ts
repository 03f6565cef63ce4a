/** The Redis the tests use (each test stack or process takes its own key prefix on it). */
export function testRedisUrl(): string {
  return process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
}
