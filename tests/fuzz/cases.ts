// fast-check arbitraries for malformed requests: one request per generated case, shaped for
// one endpoint. The kinds of damage: wrong types, missing and duplicated parameters, broken
// JSON in JSON-valued parameters, huge values, null bytes, odd Unicode, negative and
// overflowing ids, wrong methods, broken bodies (JSON, multipart, encodings) and broken Basic
// authentication headers. Oversized bodies are sent separately (they are big and few).

import fc from 'fast-check';
import { GIF_BOMB, pngDeclaring } from '@teamchat/testing';
import type { Endpoint } from './endpoints';

export interface FuzzRequest {
  kind: string;
  method: string;
  /** Path and query, already percent-encoded. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** Ids of objects that exist, so some requests get past the lookups to deeper code. */
export interface FuzzFixture {
  authorization: string;
  email: string;
  /** Path parameter name → ids that exist (e.g. stream_id → [3, 4]). */
  ids: Record<string, (number | string)[]>;
  /** Values that are valid somewhere (ids, names, emails), for parameter values. */
  validish: string[];
}

// --- values ---------------------------------------------------------------------------------

const HUGE_STRING = 'x'.repeat(100_000);
const NASTY_VALUES = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '[\u0000]',
  '"\u0000"',
  '\ud800',
  '\udfff',
  '"\\ud800"',
  '["\\udfff"]',
  '{"\\ud800":1}',
  '[{"name":"\\udc00x"}]',
  '\uffff',
  '\ufeff{}',
  '\u202egnp.exe',
  '\u200b',
  '🙂',
  'e\u0301',
  'ﬀ',
  'İ',
  'null',
  'true',
  'false',
  '[]',
  '{}',
  '[',
  '{',
  '{"a":',
  '[1,',
  '"',
  '"unterminated',
  '1e400',
  '-1e400',
  '1e-400',
  '-1',
  '0',
  '-0',
  '-2147483649',
  '2147483648',
  '4294967296',
  '9007199254740993',
  '18446744073709551616',
  '-9223372036854775809',
  '123456789012345678901234567890',
  'NaN',
  'Infinity',
  '1.5',
  '0x10',
  '1e3',
  '[-1]',
  '[0]',
  '[2147483648]',
  '[1e400]',
  '[1.5]',
  '[null]',
  '[[]]',
  '[{}]',
  '["a"]',
  '[true]',
  '{"":null}',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '[{"operator":"stream","operand":"\u0000"}]',
  '[{"operator":"","operand":null}]',
  '[{"operator":"id","operand":-1}]',
  '[{"operator":"id","operand":99999999999999999999}]',
  '[["stream"]]',
  '[{"name":"\u0000"}]',
  '[{"name":null,"description":[]}]',
  'undefined',
  '%00',
  '%ZZ',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '\\',
  '\r\n',
  HUGE_STRING,
  `"${HUGE_STRING}"`,
  `["${HUGE_STRING}"]`,
  '['.repeat(20_000) + ']'.repeat(20_000),
  '9007199254740992',
  '[9007199254740992]',
  '[{"operator":"channel","operand":2147483648}]',
  '[{"operator":"sender","operand":9007199254740992}]',
  '[{"operator":"dm","operand":[2147483648]}]',
  '[{"operator":"search","operand":"a\u0000b"}]',
  '["a\u0000b"]',
  JSON.stringify(Array.from({ length: 70_000 }, (_, i) => i + 1)),
  JSON.stringify(Array.from({ length: 5_000 }, () => 'x')),
  JSON.stringify(Array.from({ length: 3_000 }, () => ({ operator: 'search', operand: 'x' }))),
];

const COMMON_NAMES = [
  'to',
  'type',
  'content',
  'topic',
  'subject',
  'stream_id',
  'stream',
  'user_id',
  'user_ids',
  'anchor',
  'num_before',
  'num_after',
  'narrow',
  'messages',
  'op',
  'flag',
  'name',
  'names',
  'description',
  'subscriptions',
  'principals',
  'add',
  'delete',
  'remove',
  'data',
  'queue_id',
  'last_event_id',
  'event_types',
  'fetch_event_types',
  'apply_markdown',
  'emoji_name',
  'status',
  'role',
  'full_name',
  'email',
  'password',
  'username',
  'api_key',
  'pattern',
  'url_template',
  'field_type',
  'field_data',
  'hint',
  'order',
  'invite_expires_in_minutes',
  'invite_as',
  'stream_ids',
  'group_id',
  'fragment',
  'is_pinned',
  'hidden',
  'title',
  'timestamp',
  'drafts',
  'draft',
  'token',
  'appid',
  'include_subscribers',
  'property',
  'value',
  'visibility_policy',
  'new_name',
  'is_private',
  'folder_id',
  'channel_folder_id',
  'ping_only',
  'dont_block',
  'client_capabilities',
  'slim_presence',
  'new_user_group',
  'can_manage_group',
  'message_id',
  'filename',
];

export function valueArb(fixture: FuzzFixture): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...NASTY_VALUES) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? 'null') },
    { weight: 1, arbitrary: fc.integer().map(String) },
    { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
    { weight: 1, arbitrary: fc.double().map(String) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.oneof(fc.integer(), fc.string({ unit: 'binary' }), fc.constant(null)), { maxLength: 5 })
        .map((v) => JSON.stringify(v)),
    },
    { weight: 2, arbitrary: fc.constantFrom(...fixture.validish) },
  );
}

function nameArb(endpoint: Endpoint): fc.Arbitrary<string> {
  const known = [...new Set([...endpoint.paramNames, ...COMMON_NAMES])];
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...known) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', '\u0000', 'a[b]', '__proto__', 'constructor', 'hasOwnProperty', 'x'.repeat(5000)),
    },
  );
}

// --- encoding -------------------------------------------------------------------------------

/** Percent-encodes every byte that is not unreserved (lone surrogates become U+FFFD bytes). */
export function pct(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const formEncode = (pairs: [string, string][]) => pairs.map(([n, v]) => `${pct(n)}=${pct(v)}`).join('&');

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A JSON object text, keys in order (duplicates kept), values typed when they parse. */
function jsonObjectText(pairs: [string, string][]): string {
  return `{${pairs.map(([n, v]) => `${JSON.stringify(n)}:${isJson(v) && v.trim() !== '' ? v : JSON.stringify(v)}`).join(',')}}`;
}

function multipartBody(pairs: [string, string][], boundary: string): Buffer {
  const parts = pairs.map(
    ([n, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${n.replace(/["\r\n]/g, '_')}"\r\n\r\n${v}\r\n`,
  );
  return Buffer.from(`${parts.join('')}--${boundary}--\r\n`);
}

// --- the damage -----------------------------------------------------------------------------

const BROKEN_JSON_BODIES: (string | Buffer)[] = [
  '{',
  '{"a":',
  '[',
  'nul',
  '\u0000',
  '{"a":1}garbage',
  '{"a":1,}',
  "{'a':1}",
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  '\ufeff{"a":1}',
  Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]),
  Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]),
  '['.repeat(100_000),
  '{"a":' + '['.repeat(50_000) + ']'.repeat(50_000) + '}',
  '"just a string"',
  '42',
  'null',
  '[1,2,3]',
  '{"__proto__":{"polluted":true}}',
  '{"a":1e999999}',
];

function brokenMultipart(boundary: string): { contentType: string; body: Buffer }[] {
  return [
    {
      contentType: 'multipart/form-data',
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--${boundary}--\r\n`),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(`--other\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--other--\r\n`),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\n1`),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(`--${boundary}\r\n\r\nno disposition\r\n--${boundary}--\r\n`),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`,
      ),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n${'X-Pad: y\r\n'.repeat(5000)}\r\n1\r\n--${boundary}--\r\n`,
      ),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: multipartBody(
        Array.from({ length: 20_000 }, (_, i) => [`p${i}`, 'v'] as [string, string]),
        boundary,
      ),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from('garbage without any boundary at all'),
    },
    {
      contentType: `multipart/form-data; boundary=${'b'.repeat(300)}`,
      body: Buffer.from(`--${'b'.repeat(300)}--\r\n`),
    },
    { contentType: 'multipart/form-data; boundary=""', body: Buffer.from('--\r\n') },
    { contentType: `multipart/mixed; boundary=${boundary}`, body: multipartBody([['a', '1']], boundary) },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!\r\n--${boundary}--\r\n`,
      ),
    },
    {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name*=utf-8''%FF%FE\r\n\r\n1\r\n--${boundary}--\r\n`,
      ),
    },
  ];
}

const ODD_CONTENT_TYPES: { contentType: string; encoding?: string; body: Buffer }[] = [
  { contentType: 'application/json; charset=utf-7', body: Buffer.from('{"a":1}') },
  { contentType: 'application/x-www-form-urlencoded; charset=ebcdic', body: Buffer.from('a=1') },
  { contentType: 'application/x-www-form-urlencoded; charset=iso-8859-1', body: Buffer.from([0x61, 0x3d, 0xff]) },
  { contentType: 'text/plain', body: Buffer.from('a=1') },
  { contentType: 'application/octet-stream', body: Buffer.from([0, 1, 2, 3, 255]) },
  { contentType: 'application/x-www-form-urlencoded', encoding: 'gzip', body: Buffer.from('not gzip') },
  { contentType: 'application/json', encoding: 'deflate', body: Buffer.from('not deflate') },
  { contentType: 'application/json', encoding: 'br', body: Buffer.from('not brotli') },
  { contentType: 'application/json', encoding: 'x-unknown', body: Buffer.from('{}') },
  { contentType: 'application/x-www-form-urlencoded', body: Buffer.from('%ZZ=%ZZ&&=&%&a=%E0%A4%A') },
  {
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(Array.from({ length: 20_000 }, (_, i) => `p${i}=1`).join('&')),
  },
  { contentType: '', body: Buffer.from('a=1') },
  { contentType: '\u00ff/\u00ff', body: Buffer.from('a=1') },
];

const BAD_PATH_SEGMENTS = [
  '-1',
  '0',
  '2147483648',
  '4294967296',
  '99999999999999999999',
  '1e3',
  '0x10',
  '1.5',
  '+1',
  '%201',
  'abc',
  '%00',
  '1%00',
  '%F0%9F%99%82',
  '%E2%80%AE',
  '%ZZ',
  '%',
  '%C0%80',
  '%FF',
  '..',
  '%2E%2E',
  '%2F',
  'a'.repeat(3000),
  'null',
  '[1]',
  '%5B1%5D',
];

function basicHeader(raw: string | Buffer): string {
  return `Basic ${Buffer.from(raw).toString('base64')}`;
}

function brokenAuthHeaders(fixture: FuzzFixture): string[] {
  const key = Buffer.from(fixture.authorization.slice('Basic '.length), 'base64')
    .toString()
    .split(':')
    .slice(1)
    .join(':');
  return [
    'Basic',
    'Basic ',
    'Basic !!!!',
    'Basic ====',
    'Basic \u00ff\u00fe',
    'Bearer abc',
    'Digest username="x"',
    basicHeader('no-colon'),
    basicHeader(':'),
    basicHeader(`${fixture.email}:`),
    basicHeader(`:${key}`),
    basicHeader(`${fixture.email}:${key}\u0000`),
    basicHeader(`${fixture.email}\u0000:${key}`),
    basicHeader(`${fixture.email}:${key.slice(0, -1)}`),
    basicHeader(`${fixture.email}:${'k'.repeat(32)}`),
    basicHeader(`${fixture.email}:${'k'.repeat(4000)}`),
    basicHeader(`${'e'.repeat(4000)}:${key}`),
    basicHeader(`other@example.com:${key}`),
    basicHeader(Buffer.from([0xff, 0xfe, 0x3a, 0xc3, 0x28])),
    basicHeader(`\ud800:${key}`),
    `${fixture.authorization}${fixture.authorization}`,
    `${fixture.authorization} extra`,
    fixture.authorization.toLowerCase(),
  ];
}

const OTHER_METHODS = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS', 'PROPFIND', 'TRACE'];

// --- cases ----------------------------------------------------------------------------------

function pathArb(endpoint: Endpoint, fixture: FuzzFixture, allowBad: boolean): fc.Arbitrary<string> {
  const segmentFor = (name: string, wildcard: boolean): fc.Arbitrary<string> => {
    const good = fixture.ids[name] ?? [];
    const options: fc.Arbitrary<string>[] = [];
    if (good.length) options.push(fc.constantFrom(...good.map(String)));
    if (allowBad || !good.length) {
      options.push(fc.constantFrom(...BAD_PATH_SEGMENTS));
      options.push(fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(pct));
      options.push(fc.integer({ min: 1, max: 5000 }).map(String));
      if (wildcard)
        options.push(
          fc
            .array(fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }).map(pct), { minLength: 1, maxLength: 6 })
            .map((parts) => parts.join('/')),
        );
    }
    return fc.oneof(...options);
  };
  const pieces = endpoint.path.split(/([:*]\w+)/);
  return fc
    .tuple(
      ...pieces.map((piece) =>
        /^[:*]\w+$/.test(piece) ? segmentFor(piece.slice(1), piece.startsWith('*')) : fc.constant(piece),
      ),
    )
    .map((parts) => parts.join(''));
}

type Encoding = 'query' | 'form' | 'multipart' | 'json';

function withParams(
  method: string,
  path: string,
  pairs: [string, string][],
  encoding: Encoding,
  headers: Record<string, string>,
): Omit<FuzzRequest, 'kind'> {
  switch (encoding) {
    case 'query':
      return { method, path: pairs.length ? `${path}?${formEncode(pairs)}` : path, headers };
    case 'form':
      return {
        method,
        path,
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: Buffer.from(formEncode(pairs)),
      };
    case 'multipart': {
      const boundary = 'fuzzboundary7MA4YWxkTrZu0gW';
      return {
        method,
        path,
        headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: multipartBody(pairs, boundary),
      };
    }
    case 'json':
      return {
        method,
        path,
        headers: { ...headers, 'content-type': 'application/json' },
        body: Buffer.from(jsonObjectText(pairs)),
      };
  }
}

export function caseArb(endpoint: Endpoint, fixture: FuzzFixture): fc.Arbitrary<FuzzRequest> {
  const auth = { authorization: fixture.authorization, accept: 'application/json' };
  const pairArb = fc.tuple(nameArb(endpoint), valueArb(fixture));
  const encodingArb = fc.constantFrom<Encoding>('query', 'form', 'multipart', 'json');
  const goodPath = pathArb(endpoint, fixture, false);
  const anyPath = pathArb(endpoint, fixture, true);

  // Bad parameters: wrong types, broken JSON, huge values, null bytes, odd Unicode, duplicates
  // (a pair repeated with another value), and missing ones (a random subset of the names).
  const params = fc
    .record({
      path: anyPath,
      pairs: fc.array(pairArb, { maxLength: 8 }),
      duplicate: fc.option(fc.tuple(fc.nat(), valueArb(fixture)), { nil: undefined, freq: 2 }),
      encoding: encodingArb,
    })
    .map(({ path, pairs, duplicate, encoding }): FuzzRequest => {
      const all = [...pairs];
      const duplicated = Boolean(duplicate && pairs.length);
      if (duplicate && duplicated) all.push([pairs[duplicate[0] % pairs.length][0], duplicate[1]]);
      const effective = endpoint.method === 'GET' && encoding !== 'query' ? 'query' : encoding;
      return {
        kind: duplicated ? 'duplicated-params' : 'bad-params',
        ...withParams(endpoint.method, path, all, effective, auth),
      };
    });

  // Every documented parameter present with a bad value (reaches past "missing argument").
  const allNamed = fc
    .record({
      path: goodPath,
      values: fc.array(valueArb(fixture), {
        minLength: endpoint.paramNames.length,
        maxLength: endpoint.paramNames.length,
      }),
      encoding: encodingArb,
    })
    .map(({ path, values, encoding }): FuzzRequest => {
      const pairs = endpoint.paramNames.map((name, i) => [name, values[i]] as [string, string]);
      const effective = endpoint.method === 'GET' ? 'query' : encoding;
      return { kind: 'all-params-bad', ...withParams(endpoint.method, path, pairs, effective, auth) };
    });

  const brokenJson = fc
    .record({ path: goodPath, body: fc.constantFrom(...BROKEN_JSON_BODIES) })
    .map(({ path, body }): FuzzRequest => ({
      kind: 'broken-json-body',
      method: endpoint.method,
      path,
      headers: { ...auth, 'content-type': 'application/json' },
      body: Buffer.from(body),
    }));

  const multipart = fc
    .record({ path: goodPath, variant: fc.constantFrom(...brokenMultipart('fuzzB0undary')) })
    .map(({ path, variant }): FuzzRequest => ({
      kind: 'broken-multipart',
      method: endpoint.method,
      path,
      headers: { ...auth, 'content-type': variant.contentType },
      body: variant.body,
    }));

  const contentTypes = fc
    .record({ path: goodPath, variant: fc.constantFrom(...ODD_CONTENT_TYPES) })
    .map(({ path, variant }): FuzzRequest => {
      const headers: Record<string, string> = { ...auth, 'content-type': variant.contentType };
      if (variant.encoding) headers['content-encoding'] = variant.encoding;
      return { kind: 'odd-content-type', method: endpoint.method, path, headers, body: variant.body };
    });

  const wrongMethods = OTHER_METHODS.filter(
    (m) => !endpoint.methods.includes(m) && !(m === 'HEAD' && endpoint.methods.includes('GET')),
  );
  const wrongMethod = fc
    .record({ path: goodPath, method: fc.constantFrom(...wrongMethods), pairs: fc.array(pairArb, { maxLength: 3 }) })
    .map(({ path, method, pairs }): FuzzRequest => ({
      kind: 'wrong-method',
      ...withParams(method, path, pairs, 'form', auth),
    }));

  const badAuth = fc
    .record({
      path: goodPath,
      header: fc.oneof(
        fc.constantFrom(...brokenAuthHeaders(fixture)),
        fc.string({ unit: 'binary', maxLength: 60 }).map(basicHeader),
      ),
    })
    .map(({ path, header }): FuzzRequest => ({
      kind: 'broken-basic-auth',
      method: endpoint.method,
      path,
      headers: { authorization: header, accept: 'application/json' },
    }));

  const arbs: fc.Arbitrary<FuzzRequest>[] = [
    params,
    params,
    params,
    allNamed,
    brokenJson,
    multipart,
    contentTypes,
    badAuth,
  ];
  if (wrongMethods.length) arbs.push(wrongMethod);
  return fc.oneof(...arbs);
}

// --- targeted values ------------------------------------------------------------------------
//
// Not random: every documented parameter of every endpoint, one at a time, gets each value
// below while the other parameters hold plausible values (so the parser reaches it). Ids at
// 2^31 (past the int32 id columns) and 2^53 (past exact JSON integers), NUL in plain and in JSON
// strings, CR/LF, and lists far past any bound (each of these was once a 500); file
// names and declared types with NUL and CR/LF for the two upload endpoints.

/** Values for a parameter, each sent once per parameter of every endpoint. */
export const TARGETED_VALUES: [string, string][] = [
  ['nul', 'a\u0000b'],
  ['nul-json-string', '"a\u0000b"'],
  ['nul-in-list', '["a\u0000b"]'],
  ['nul-in-object', '[{"name":"a\u0000b","operator":"search","operand":"a\u0000b"}]'],
  ['crlf', 'a\r\nX-Injected: 1'],
  ['id-2^31', '2147483648'],
  ['id-2^53', '9007199254740992'],
  ['ids-2^31', '[2147483648]'],
  ['ids-2^53', '[9007199254740992]'],
  ['huge-list', JSON.stringify(Array.from({ length: 20_000 }, (_, i) => i + 1))],
  ['huge-narrow', JSON.stringify(Array.from({ length: 300 }, () => ({ operator: 'sender', operand: 2 ** 31 })))],
  ['huge-dm-operand', JSON.stringify([{ operator: 'dm', operand: Array.from({ length: 5000 }, (_, i) => i + 1) }])],
];

/** Operands past the id columns and with NUL, for every narrow operator that takes one. */
const NARROW_OPERATORS = [
  'channel',
  'stream',
  'sender',
  'dm',
  'pm-with',
  'dm-including',
  'group-pm-with',
  'id',
  'with',
  'topic',
  'search',
];
export const TARGETED_NARROWS: [string, string][] = NARROW_OPERATORS.flatMap((operator): [string, string][] => {
  const wrap = (operand: unknown) => JSON.stringify([{ operator, operand }]);
  const many = operator === 'dm' || operator === 'pm-with';
  return [
    [`narrow-${operator}-2^31`, wrap(many ? [2 ** 31] : 2 ** 31)],
    [`narrow-${operator}-2^53`, wrap(many ? [2 ** 53] : 2 ** 53)],
    [`narrow-${operator}-nul`, wrap('a\u0000b')],
  ];
});

/** Values for one parameter name only: 5,000 channels to create (once the 30 s transaction timeout, a 500). */
const manyNewChannels = JSON.stringify(Array.from({ length: 5000 }, (_, i) => ({ name: `fuzz new channel ${i}` })));
/** A Unix time past what the database holds, and names built to reach email headers. */
const FAR_FUTURE: [string, string] = ['far-future-timestamp', '1000000000000'];
const ENCODED_WORD_NAME: [string, string] = ['encoded-word-name', 'Evil =?utf-8?b?U2VjdXJpdHkgVGVhbQ==?='];
const LONG_MULTIBYTE_NAME: [string, string] = ['long-multibyte-name', 'é'.repeat(300)];
const TARGETED_BY_NAME: Record<string, [string, string][]> = {
  scheduled_delivery_timestamp: [FAR_FUTURE],
  drafts: [['far-future-draft', '[{"type":"","to":[],"topic":"","content":"c","timestamp":1000000000000}]']],
  draft: [['far-future-draft', '{"type":"","to":[],"topic":"","content":"c","timestamp":1000000000000}']],
  full_name: [ENCODED_WORD_NAME, LONG_MULTIBYTE_NAME],
  name: [ENCODED_WORD_NAME, LONG_MULTIBYTE_NAME],
  narrow: TARGETED_NARROWS,
  subscriptions: [['many-new-channels', manyNewChannels]],
  add: [['many-new-channels', manyNewChannels]],
};

/**
 * Values that get a request past the parameters before the one under test (none for
 * message_ids: it would cut GET /messages short).
 */
function plausibleValue(name: string, endpoint: Endpoint, fixture: FuzzFixture): string | undefined {
  const first = (key: string) => String(fixture.ids[key]?.[0] ?? 1);
  const byName: Record<string, string> = {
    type: 'stream',
    to: first('stream_id'),
    topic: 'fuzz topic',
    subject: 'fuzz topic',
    content: 'fuzz',
    op: 'add',
    flag: 'read',
    anchor: 'newest',
    num_before: '1',
    num_after: '0',
    narrow: '[]',
    messages: `[${first('message_id')}]`,
    stream_id: first('stream_id'),
    message_id: first('message_id'),
    user_id: first('user_id'),
    principals: `[${first('user_id')}]`,
    subscriptions: endpoint.method === 'DELETE' ? '["fuzz spare"]' : '[{"name":"fuzz spare"}]',
    add: '[{"name":"fuzz spare"}]',
    delete: '["fuzz spare"]',
    subscription_data: `[{"stream_id":${first('stream_id')},"property":"pin_to_top","value":true}]`,
    emoji_name: 'smile',
    topic_name: 'fuzz topic',
    name: 'fuzz name',
    description: 'fuzz description',
    drafts: `[{"type":"stream","to":[${first('stream_id')}],"topic":"t","content":"c"}]`,
    draft: `{"type":"stream","to":[${first('stream_id')}],"topic":"t","content":"c"}`,
  };
  return byName[name];
}

/** One request per (documented parameter, targeted value) of the endpoint. */
export function targetedCases(endpoint: Endpoint, fixture: FuzzFixture, path: string): FuzzRequest[] {
  const auth = { authorization: fixture.authorization, accept: 'application/json' };
  const cases: FuzzRequest[] = [];
  for (const target of endpoint.paramNames) {
    const values = [...TARGETED_VALUES, ...(TARGETED_BY_NAME[target] ?? [])];
    for (const [kind, value] of values) {
      const pairs: [string, string][] = endpoint.paramNames.flatMap((name): [string, string][] => {
        if (name === target) return [[name, value]];
        const plausible = plausibleValue(name, endpoint, fixture);
        return plausible === undefined ? [] : [[name, plausible]];
      });
      // A body even for GET: a huge list does not fit a query string (the services read GET bodies).
      const encoding: Encoding = endpoint.method === 'GET' && value.length < 2000 ? 'query' : 'form';
      cases.push({ kind: `targeted-${kind}`, ...withParams(endpoint.method, path, pairs, encoding, auth) });
    }
  }
  return [...cases, ...targetedUploadCases(endpoint, auth)];
}

/** Names and types a served file's headers are built from (NUL in a name, CR/LF or a smuggled type). */
const HEADER_BOUND_VALUES: [string, string][] = [
  ['nul', 'a\u0000b.txt'],
  ['crlf', 'a.txt\r\nX-Injected: 1'],
  ['smuggled-type', 'text/plain;x=y,text/html'],
  // Names past 255 bytes once answered 500 (ENAMETOOLONG), multi-byte ones sooner.
  ['long-name', `${'a'.repeat(300)}.txt`],
  ['long-multibyte-name', `${'é'.repeat(200)}.txt`],
];

/** Images declaring 400 and 4,300 megapixels (a 20,000 x 20,000 PNG header, a 29-byte GIF). */
function imageBombs(): [string, Buffer][] {
  return [
    ['png-bomb', pngDeclaring(20_000, 20_000)],
    ['gif-bomb', GIF_BOMB],
  ];
}

/** A multipart body of one file part: `disposition` after its field's name, then its type and bytes. */
function filePartBody(boundary: string, field: string, disposition: string, type: string, content: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; ${disposition}\r\nContent-Type: ${type}\r\n\r\n`,
    ),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

/** Uploads: the file name and declared type, in a multipart part (filename*) and in tus metadata. */
function targetedUploadCases(endpoint: Endpoint, auth: Record<string, string>): FuzzRequest[] {
  const key = `${endpoint.method} ${endpoint.path}`;
  if (key === 'POST /api/v1/user_uploads') {
    const boundary = 'fuzzboundaryUpl0ad';
    const part = (disposition: string, type: string) =>
      filePartBody(boundary, 'file', disposition, type, Buffer.from('fuzz'));
    return HEADER_BOUND_VALUES.flatMap(([kind, value]): FuzzRequest[] => [
      {
        kind: `targeted-upload-filename-${kind}`,
        method: 'POST',
        path: endpoint.path,
        headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: part(`filename*=UTF-8''${pct(value)}`, 'text/plain'),
      },
      {
        kind: `targeted-upload-type-${kind}`,
        method: 'POST',
        path: endpoint.path,
        headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
        // A raw CR/LF would end the part's header: the type keeps what a header line can carry.
        body: part('filename="fuzz.txt"', value.replace(/[\r\n]/g, ' ').replaceAll('\u0000', ' ')),
      },
    ]);
  }
  if (key === 'POST /api/v1/realm/emoji/*emoji_name') {
    const boundary = 'fuzzboundaryEm0ji';
    return imageBombs().map(([kind, image]) => ({
      kind: `targeted-emoji-${kind}`,
      method: 'POST',
      path: endpoint.path.replace('*emoji_name', `fuzz_${kind.replace('-', '_')}`),
      headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: filePartBody(boundary, 'f', 'filename="bomb"', `image/${kind.split('-')[0]}`, image),
    }));
  }
  if (key === 'POST /api/v1/tus') {
    const metadata = (name: string, value: string) => `${name} ${Buffer.from(value).toString('base64')}`;
    return HEADER_BOUND_VALUES.flatMap(([kind, value]): FuzzRequest[] =>
      ['filename', 'filetype'].map((name) => ({
        kind: `targeted-tus-${name}-${kind}`,
        method: 'POST',
        path: endpoint.path,
        headers: {
          ...auth,
          'tus-resumable': '1.0.0',
          'upload-length': '4',
          'upload-metadata':
            name === 'filename' ? metadata(name, value) : `${metadata('filename', 'f.txt')},${metadata(name, value)}`,
        },
      })),
    );
  }
  return [];
}
