// The structured logs (packages/core/src/logger.ts): JSON lines that carry the active trace,
// and that never contain a secret, wherever a caller puts it.

import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { createLogger } from '@teamchat/core';
import { sleep } from '@teamchat/testing';

function capture() {
  const lines: Record<string, any>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  return { logger: createLogger('logging-test', 'info', destination), lines, raw };
}

const API_KEY = 'Zx81yQpLm3NcVbT0aRsDfGhJkLq2WeRt';
const PASSWORD = 'correct horse battery staple';

describe('secrets never reach a log line', () => {
  test('fields named like secrets are masked at any depth, other fields are kept', () => {
    const { logger, lines, raw } = capture();
    logger.info(
      {
        api_key: API_KEY,
        password: PASSWORD,
        user_id: 7,
        queue: 'mark-all-read',
        key: 'tc:{intake:3}:stream',
        request: {
          headers: {
            authorization: `Basic ${Buffer.from(`ada@example.com:${API_KEY}`).toString('base64')}`,
            'x-teamchat-internal-token': 'eyJhbGciOi.x.y',
            cookie: 'sessionid=abc',
            'user-agent': 'ZulipMobile',
          },
          body: { new_password: PASSWORD, old_password: PASSWORD, content: 'hello' },
        },
        clients: [{ apiKey: API_KEY }, { 'api-key': API_KEY }, { token: 'push-token-123456' }],
        config: {
          INTERNAL_JWT_SECRET: 'jwt-secret-value',
          aws_secret: 'aws-secret-value',
          refresh_token: 'refresh-token-value',
        },
      },
      'a record full of secrets',
    );
    expect(raw.join('\n')).not.toMatch(
      new RegExp(
        [
          API_KEY,
          PASSWORD,
          'eyJhbGciOi',
          'sessionid=abc',
          'push-token-123456',
          'jwt-secret-value',
          'aws-secret-value',
          'refresh-token-value',
        ].join('|'),
      ),
    );
    const [line] = lines;
    expect(line).toMatchObject({
      level: 'info',
      service: 'logging-test',
      msg: 'a record full of secrets',
      api_key: '[redacted]',
      password: '[redacted]',
      user_id: 7,
      queue: 'mark-all-read',
      key: 'tc:{intake:3}:stream',
      request: {
        headers: {
          authorization: '[redacted]',
          'x-teamchat-internal-token': '[redacted]',
          cookie: '[redacted]',
          'user-agent': 'ZulipMobile',
        },
        body: { new_password: '[redacted]', old_password: '[redacted]', content: 'hello' },
      },
      clients: [{ apiKey: '[redacted]' }, { 'api-key': '[redacted]' }, { token: '[redacted]' }],
    });
    expect(new Date(line.time).toISOString()).toBe(line.time);
  });

  test('credentials inside strings are masked: URLs, query strings, Authorization values, messages', () => {
    const { logger, lines, raw } = capture();
    logger.warn(
      {
        url: `http://gateway/user_uploads/2/ab/f.png?api_key=${API_KEY}&size=small`,
        database: 'postgresql://teamchat:db-password-1@postgres:5432/teamchat',
      },
      `retrying with Bearer ${API_KEY}`,
    );
    logger.info(`connecting to redis://:redis-password-2@redis:6379/0 and https://x?token=${API_KEY}`);
    expect(raw.join('\n')).not.toMatch(new RegExp([API_KEY, 'db-password-1', 'redis-password-2'].join('|')));
    expect(lines[0]).toMatchObject({
      url: 'http://gateway/user_uploads/2/ab/f.png?api_key=[redacted]&size=small',
      database: 'postgresql://teamchat:[redacted]@postgres:5432/teamchat',
      msg: 'retrying with Bearer [redacted]',
    });
    expect(lines[1].msg).toBe('connecting to redis://:[redacted]@redis:6379/0 and https://x?token=[redacted]');
  });

  test('errors are serialized with their secrets masked', () => {
    const { logger, lines, raw } = capture();
    const error = Object.assign(
      new Error('connect ECONNREFUSED postgresql://teamchat:db-password-3@10.0.0.5:5432/teamchat'),
      {
        config: { headers: { Authorization: `Basic ${API_KEY}` } },
        code: 'ECONNREFUSED',
      },
    );
    logger.error({ err: error }, 'query failed');
    expect(raw.join('\n')).not.toMatch(new RegExp([API_KEY, 'db-password-3'].join('|')));
    expect(lines[0].err).toMatchObject({
      type: 'Error',
      message: 'connect ECONNREFUSED postgresql://teamchat:[redacted]@10.0.0.5:5432/teamchat',
      code: 'ECONNREFUSED',
      config: { headers: { Authorization: '[redacted]' } },
      stack: expect.stringContaining('ECONNREFUSED'),
    });
    expect(lines[0].err.stack).not.toContain('db-password-3');
  });

  test('an object met twice is logged twice; a cycle is cut, not followed', () => {
    const { logger, lines } = capture();
    const shared = { name: 'shared', password: PASSWORD };
    const cyclic: Record<string, unknown> = { name: 'cyclic' };
    cyclic.self = cyclic;
    logger.info({ first: shared, second: shared, cyclic }, 'references');
    expect(lines[0]).toMatchObject({
      first: { name: 'shared', password: '[redacted]' },
      second: { name: 'shared', password: '[redacted]' },
      cyclic: { name: 'cyclic', self: '[elided]' },
    });
  });

  test('child loggers mask their bindings too', () => {
    const { logger, lines, raw } = capture();
    logger.child({ request_id: 'req-1', token: 'child-token-value' }).info('from a child');
    expect(raw.join('\n')).not.toContain('child-token-value');
    expect(lines[0]).toMatchObject({ request_id: 'req-1', token: '[redacted]', msg: 'from a child' });
  });
});

describe('log lines carry the active trace', () => {
  const provider = new BasicTracerProvider();
  const contextManager = new AsyncLocalStorageContextManager();

  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
  });

  afterAll(async () => {
    trace.disable();
    context.disable();
    await provider.shutdown();
  });

  test('inside a span every line has its trace_id and span_id, across awaits; outside there are none', async () => {
    const { logger, lines } = capture();
    logger.info('before');
    const ids = await trace.getTracer('logging-test').startActiveSpan('request', async (span) => {
      logger.info('in the span');
      await sleep(5);
      logger.child({ request_id: 'r' }).info('after an await, from a child');
      span.end();
      return span.spanContext();
    });
    logger.info('after');
    expect(lines.map((line) => [line.msg, line.trace_id, line.span_id])).toEqual([
      ['before', undefined, undefined],
      ['in the span', ids.traceId, ids.spanId],
      ['after an await, from a child', ids.traceId, ids.spanId],
      ['after', undefined, undefined],
    ]);
  });
});
