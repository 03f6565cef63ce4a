// What the instrumentations may put in spans (packages/telemetry/src/redaction.ts, used by sdk.ts).

import { exportConfigured } from '../src/sdk';
import { redactQueryString, redisStatement } from '../src/redaction';

test('sensitive query parameters lose their values, others are kept as sent', () => {
  expect(redactQueryString('api_key=Zx81yQpLm3NcVbT0&size=thumbnail')).toBe('api_key=REDACTED&size=thumbnail');
  expect(redactQueryString('queue_id=1%3Aabc&last_event_id=-1&dont_block=true')).toBe(
    'queue_id=1%3Aabc&last_event_id=-1&dont_block=true',
  );
  expect(redactQueryString('X-Amz-Signature=abc&X-Amz-Credential=k%2F2026&x=1')).toBe(
    'X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED&x=1',
  );
  // Names are compared decoded and case-insensitively; a bare name has no value to hide.
  expect(redactQueryString('API%5FKEY=secret&Token=t&password')).toBe('API%5FKEY=REDACTED&Token=REDACTED&password');
});

test('a Redis command is named with the key it touches, never with the values it carries', () => {
  expect(redisStatement('get', ['tc:auth:' + 'ab'.repeat(32)])).toBe('GET tc:auth:…');
  expect(redisStatement('set', ['tc:auth:' + 'ab'.repeat(32), '{"userId":1,"email":"a@b"}', 'EX', 60])).toBe(
    'SET tc:auth:… [3 other arguments]',
  );
  expect(
    redisStatement('evalsha', [
      '0123456789abcdef0123456789abcdef01234567',
      2,
      'tc:bull:mark-all-read:wait',
      'tc:bull:mark-all-read:meta',
      '{"content":"private message"}',
    ]),
  ).toBe('EVALSHA tc:bull:mark-all-read:wait [4 other arguments]');
  expect(redisStatement('xadd', ['tc:{intake:3}:stream', '*', 'event', '{"type":"message","content":"hello"}'])).toBe(
    'XADD tc:{intake:3}:stream [3 other arguments]',
  );
  expect(redisStatement('auth', ['default', 'redis-password'])).toBe('AUTH');
  expect(redisStatement('ping', [])).toBe('PING');
});

test('export is on only when the standard OTEL_* variables ask for it', () => {
  expect(exportConfigured({})).toBe(false);
  expect(exportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
  expect(exportConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
  expect(exportConfigured({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
  expect(exportConfigured({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(
    false,
  );
  expect(exportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBe(false);
});
