// The Zulip wire format, through HTTP, on a service app with one synthetic route that reads
// one parameter of each kind. (Its answers are not Zulip endpoints, so they are not checked
// against zulip.yaml; every product endpoint's are.)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLogger,
  createServiceApp,
  optional,
  param,
  pathInt,
  required,
  signInternalToken,
  v,
  type Route,
} from '@teamchat/core';
import { ApiClient, expectError, type Params, type RequestOptions } from '@teamchat/testing';

const SECRET = 'test-secret';
const narrowTerm = v.object({ operator: v.str(), operand: v.union(v.str(), v.int()) }, { negated: v.bool() });

const routes: Route<object>[] = [
  {
    method: 'POST',
    path: '/api/v1/echo/:thing_id',
    view: ({ params, req }) => ({
      thing_id: pathInt(req, 'thing_id'),
      ...params.parse({
        op: required(param.enumString('add', 'remove')),
        count: optional(param.int({ min: 0, max: 5000 }), 10),
        flag: optional(param.bool(), false),
        topic: optional(param.string({ maxLength: 60, strip: true }), '', { aliases: ['subject'] }),
        to: optional(param.json(v.list(v.int()))),
        narrow: optional(param.json(v.list(narrowTerm)), []),
      }),
    }),
  },
];
for (const method of ['GET', 'PATCH', 'DELETE'] as const) routes.push({ ...routes[0], method });

let server: http.Server;
let baseUrl: string;
beforeAll(async () => {
  const app = createServiceApp({
    name: 'test',
    routes,
    deps: {},
    internalSecret: SECRET,
    logger: createLogger('test', 'silent'),
  });
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

function call(method: string, params: Params, options: RequestOptions = {}, path = '/api/v1/echo/7') {
  const token = signInternalToken(SECRET, {
    user: { userId: 1, realmId: 1, role: 400, email: 'a@example.com', isBot: false },
    realmId: 1,
    method,
    path,
  });
  return new ApiClient(baseUrl).request(method, path, params, {
    ...options,
    validate: false,
    headers: { 'x-teamchat-internal-token': token },
  });
}

const full = {
  op: 'add',
  count: 3,
  flag: true,
  topic: '  hello  ',
  to: [1, 2],
  narrow: [{ operator: 'stream', operand: 'design' }],
};
const parsed = {
  result: 'success',
  msg: '',
  thing_id: 7,
  op: 'add',
  count: 3,
  flag: true,
  topic: 'hello',
  to: [1, 2],
  narrow: [{ operator: 'stream', operand: 'design' }],
};

describe('each encoding gives the same parameters', () => {
  test.each([
    ['urlencoded body', 'POST', 'form'],
    ['multipart body (zulip-js)', 'POST', 'multipart'],
    ['JSON body', 'POST', 'json'],
    ['query string on GET', 'GET', 'query'],
    ['query string on PATCH (zulip-js)', 'PATCH', 'query'],
    ['query string on DELETE (zulip-js)', 'DELETE', 'query'],
    ['urlencoded body on PATCH (python-zulip-api)', 'PATCH', 'form'],
    ['urlencoded body on DELETE (python-zulip-api)', 'DELETE', 'form'],
  ] as const)('%s', async (_name, method, encoding) => {
    const response = await call(method, full, { encoding });
    expect(response.body).toEqual(parsed);
    expect(response.status).toBe(200);
  });
});

test('defaults apply when optional parameters are absent', async () => {
  const response = await call('POST', { op: 'remove' });
  expect(response.body).toEqual({
    result: 'success',
    msg: '',
    thing_id: 7,
    op: 'remove',
    count: 10,
    flag: false,
    topic: '',
    narrow: [],
  });
});

test('an alias names the same parameter (subject for topic)', async () => {
  expect((await call('POST', { op: 'add', subject: 'old name' })).body.topic).toBe('old name');
});

test('the body wins over the query string; a repeated parameter keeps its last value', async () => {
  const response = await call('POST', { op: 'add' }, { encoding: 'form' }, '/api/v1/echo/7');
  expect(response.body.op).toBe('add');
  const token = signInternalToken(SECRET, {
    user: { userId: 1, realmId: 1, role: 400, email: 'a@example.com', isBot: false },
    realmId: 1,
    method: 'POST',
    path: '/api/v1/echo/7',
  });
  const repeated = await new ApiClient(baseUrl).request(
    'POST',
    '/api/v1/echo/7?op=remove&count=1',
    {},
    {
      validate: false,
      body: 'op=add&count=2&count=4',
      headers: { 'x-teamchat-internal-token': token, 'content-type': 'application/x-www-form-urlencoded' },
    },
  );
  expect(repeated.body).toMatchObject({ op: 'add', count: 4 });
});

test('unknown parameters are listed, sorted, in ignored_parameters_unsupported', async () => {
  const response = await call('POST', { op: 'add', zebra: 1, apple: 'x' });
  expect(response.body.ignored_parameters_unsupported).toEqual(['apple', 'zebra']);
});

describe("Zulip's error texts", () => {
  test.each([
    [{}, 'REQUEST_VARIABLE_MISSING', "Missing 'op' argument"],
    [{ op: 'launch' }, 'BAD_REQUEST', 'Invalid op'],
    [{ op: 'add', count: 'many' }, 'BAD_REQUEST', 'count is not valid JSON'],
    [{ op: 'add', count: '"3"' }, 'BAD_REQUEST', 'count is not an integer'],
    [{ op: 'add', count: 1.5 }, 'BAD_REQUEST', 'count is not an integer'],
    [{ op: 'add', count: -1 }, 'BAD_REQUEST', 'count is too small'],
    [{ op: 'add', count: 5001 }, 'BAD_REQUEST', 'count is too large'],
    [{ op: 'add', flag: 'yes' }, 'BAD_REQUEST', 'flag is not valid JSON'],
    [{ op: 'add', flag: 1 }, 'BAD_REQUEST', 'flag is not a boolean'],
    [{ op: 'add', topic: 'x'.repeat(61) }, 'BAD_REQUEST', 'topic is too long (limit: 60 characters)'],
    [{ op: 'add', topic: 'a\u0000b' }, 'BAD_REQUEST', 'topic contains NULL (0x00) characters.'],
    [{ op: 'add', to: '[1,' }, 'BAD_REQUEST', 'to is not valid JSON'],
    [{ op: 'add', to: { a: 1 } }, 'BAD_REQUEST', 'to is not a list'],
    [{ op: 'add', to: [1, 'x'] }, 'BAD_REQUEST', 'to[1] is not an integer'],
    [{ op: 'add', narrow: [{ operator: 'is' }] }, 'BAD_REQUEST', "narrow[0] is missing the 'operand' key"],
    [{ op: 'add', narrow: [{ operator: 'is', operand: true }] }, 'BAD_REQUEST', 'narrow[0]["operand"] is not a string'],
    [
      { op: 'add', narrow: [{ operator: 'is', operand: 'x', extra: 1 }] },
      'BAD_REQUEST',
      'Argument "extra" at narrow[0] is unexpected',
    ],
  ])('%j → %s %s', async (params, code, msg) => {
    const response = await call('POST', params as Params);
    expectError(response, 400, code, msg);
  });

  test('a missing parameter names itself in var_name', async () => {
    expect((await call('POST', {})).body.var_name).toBe('op');
  });

  test('a non-numeric path id is a 404', async () => {
    expectError(
      await call('POST', { op: 'add' }, {}, '/api/v1/echo/abc'),
      404,
      'BAD_REQUEST',
      'Endpoint does not exist',
    );
  });

  test('malformed bodies are 4xx envelopes, never 500', async () => {
    const token = (method: string) =>
      signInternalToken(SECRET, {
        user: { userId: 1, realmId: 1, role: 400, email: 'a@example.com', isBot: false },
        realmId: 1,
        method,
        path: '/api/v1/echo/7',
      });
    const cases: [string, string][] = [
      ['application/json', '{"op": '],
      ['multipart/form-data; boundary=XYZ', '--XYZ\r\nContent-Disposition: form-data; name="op"\r\n\r\nadd'],
      ['multipart/form-data', 'no boundary at all'],
    ];
    for (const [contentType, body] of cases) {
      const response = await new ApiClient(baseUrl).request(
        'POST',
        '/api/v1/echo/7',
        {},
        {
          validate: false,
          body,
          headers: { 'content-type': contentType, 'x-teamchat-internal-token': token('POST') },
        },
      );
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      expect(response.body).toMatchObject({ result: 'error', code: expect.any(String), msg: expect.any(String) });
    }
  });
});

describe('input no store can hold is a 400, not a 500 (found by tests/fuzz)', () => {
  const token = (method: string, path: string) =>
    signInternalToken(SECRET, {
      user: { userId: 1, realmId: 1, role: 400, email: 'a@example.com', isBot: false },
      realmId: 1,
      method,
      path,
    });
  const raw = (body: string, contentType: string) =>
    new ApiClient(baseUrl).request(
      'POST',
      '/api/v1/echo/7',
      {},
      {
        validate: false,
        body,
        headers: { 'x-teamchat-internal-token': token('POST', '/api/v1/echo/7'), 'content-type': contentType },
      },
    );

  test('an unpaired surrogate in a string parameter (a JSON body can carry one)', async () => {
    expectError(
      await raw('{"op":"add","topic":"a\\udfffb"}', 'application/json'),
      400,
      'BAD_REQUEST',
      'topic is not valid Unicode',
    );
  });

  test('an unpaired surrogate inside a JSON-valued parameter', async () => {
    const narrow = '[{"operator":"stream","operand":"\\ud800"}]';
    const response = await call('POST', { op: 'add', narrow });
    expectError(response, 400, 'BAD_REQUEST', 'narrow[0]["operand"] is not valid Unicode');
  });

  test('a JSON-valued form parameter nested thousands deep', async () => {
    expectError(
      await call('POST', { op: 'add', narrow: `${'['.repeat(5_000)}${']'.repeat(5_000)}` }),
      400,
      'BAD_REQUEST',
      'narrow is not valid JSON',
    );
  });

  test('a JSON body nested deeper than it can be re-encoded', async () => {
    expectError(
      await raw(`{"op":"add","to":${'['.repeat(50_000)}${']'.repeat(50_000)}}`, 'application/json'),
      400,
      'BAD_REQUEST',
      'to is not valid JSON',
    );
  });

  test('a multipart body busboy cannot parse', async () => {
    const response = await raw(
      '--b\r\nContent-Disposition: form-data; name="op"\r\n' + 'X-Pad: y\r\n'.repeat(5000) + '\r\nadd\r\n--b--\r\n',
      'multipart/form-data; boundary=b',
    );
    expectError(response, 400, 'BAD_REQUEST', /^Malformed multipart body/);
  });
});

describe('values PostgreSQL would refuse, and lists past their bound, answer 400, never 500', () => {
  const user = { userId: 1, realmId: 1, role: 400, email: 'a@example.com', isBot: false };
  const token = (method: string, path: string) => signInternalToken(SECRET, { user, realmId: 1, method, path });
  const refused = (response: Awaited<ReturnType<typeof call>>, msg: string) =>
    expectError(response, 400, 'BAD_REQUEST', msg);
  const nul = (place: string) => `${place} contains NULL (0x00) characters.`;

  test('a NUL anywhere in a JSON-valued parameter is named by its place', async () => {
    const search = [{ operator: 'search', operand: 'a\u0000b' }];
    refused(await call('POST', { op: 'add', narrow: search }), nul('narrow[0]["operand"]'));
    const badKey = [{ operator: 'is', operand: 'x', ['a\u0000']: 1 }];
    refused(await call('POST', { op: 'add', narrow: badKey }), nul('narrow[0]'));
  });

  test('the first bad string of the text is the one reported', async () => {
    const narrow = [
      { operator: 'is', operand: 'a\u0000' },
      { operator: 'is', operand: '\ud800' },
    ];
    refused(await call('POST', { op: 'add', narrow: JSON.stringify(narrow) }), nul('narrow[0]["operand"]'));
  });

  test.each([2 ** 31, 2 ** 53, -1])("v.id() takes the id columns' range only: %d", (id) => {
    expect(() => v.id()(id, 'stream_id')).toThrow(id < 0 ? 'stream_id is too small' : 'stream_id is too large');
    expect(v.id()(2 ** 31 - 1, 'stream_id')).toBe(2 ** 31 - 1);
    expect(v.isDatabaseId(id)).toBe(false);
  });

  test('a list past its bound is refused before any item is checked', () => {
    const ids = v.list(v.id(), { maxLength: 3 });
    expect(() => ids([1, 2, 3, 'x'], 'messages')).toThrow('messages is too long (limit: 3 items)');
    const worded = v.list(v.id(), { maxLength: 1, tooLong: (_name, max) => `Too many (maximum ${max}).` });
    expect(() => worded([1, 2], 'message_ids')).toThrow('Too many (maximum 1).');
  });

  test('param.json lets NUL through only when its action words the refusal itself', () => {
    const drafts = v.list(v.str({ allowNullBytes: true }));
    expect(param.json(drafts, { allowNullBytes: true }).decode('["a\\u0000"]', 'drafts')).toEqual(['a\u0000']);
    expect(() => param.json(drafts).decode('["a\\u0000"]', 'drafts')).toThrow(nul('drafts[0]'));
  });

  test('a multipart body is measured whole against the limit, declared or chunked', async () => {
    const logger = createLogger('test', 'silent');
    const options = { name: 'small', routes, deps: {}, internalSecret: SECRET, logger, bodyLimitBytes: 1000 };
    const small = createServiceApp(options);
    const smallServer = http.createServer(small);
    await new Promise<void>((resolve) => smallServer.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(smallServer.address() as AddressInfo).port}`;
      const client = new ApiClient(url);
      const headers = { 'x-teamchat-internal-token': token('POST', '/api/v1/echo/7') };
      const fields = { op: 'add', topic: 'x'.repeat(50), a: 'y'.repeat(600), b: 'y'.repeat(600) };
      const multipart = { validate: false, encoding: 'multipart' as const, headers };
      const response = await client.request('POST', '/api/v1/echo/7', fields, multipart);
      expectError(response, 413, 'BAD_REQUEST', 'Request body too large');
      // Chunked, without a declared length: counted as it arrives.
      const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const contentType = 'multipart/form-data; boundary=b';
        const requestHeaders = { ...headers, 'content-type': contentType };
        const request = http.request(`${url}/api/v1/echo/7`, { method: 'POST', headers: requestHeaders });
        request.on('response', (answer) => {
          let body = '';
          answer.on('data', (chunk) => (body += chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }));
        });
        request.on('error', reject);
        for (const name of ['op', 'a', 'b', 'c']) {
          const value = name === 'op' ? 'add' : 'y'.repeat(600);
          request.write(`--b\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
        }
        request.end('--b--\r\n');
      });
      expect(chunked.status).toBe(413);
      expect(JSON.parse(chunked.body)).toMatchObject({ result: 'error', msg: 'Request body too large' });
    } finally {
      await new Promise((resolve) => smallServer.close(resolve));
    }
  });
});
