// Every operation of Zulip 10.2's zulip.yaml, called once through the gateway of the whole
// stack: none may answer "Endpoint does not exist" (no route here, at the gateway or in the
// service) or 405 (the path is routed, the method is not). What the call is refused for
// otherwise (missing parameters, unknown ids, permissions) does not matter here: only that the
// server knows the endpoint. Each call is made by a fresh organisation owner, so a call that
// deactivates its caller (DELETE /users/me) cannot disturb the next.

import fs from 'node:fs';
import YAML from 'yaml';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { zulipOpenApiPath } from '@teamchat/testing';

/**
 * Operations not called, and why (only these):
 * - POST /real-time: documents the event system (register, GET/DELETE /events), not an endpoint.
 * - POST /rest-error-handling: documents the error envelope, not an endpoint.
 * - POST /zulip-outgoing-webhook: the payload Zulip POSTs to a bot's server, not an endpoint of ours.
 * - POST /dev_fetch_api_key: Zulip's development-server-only login.
 */
const EXCLUDED = new Set(['/real-time', '/rest-error-handling', '/zulip-outgoing-webhook', '/dev_fetch_api_key']);

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Operation {
  method: string;
  path: string;
}

function operations(): Operation[] {
  const doc = YAML.parse(fs.readFileSync(zulipOpenApiPath(), 'utf8')) as { paths: Record<string, object> };
  const found: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (EXCLUDED.has(path)) continue;
    for (const method of METHODS) if (method in item) found.push({ method: method.toUpperCase(), path });
  }
  return found;
}

let stack: Stack;
let counter = 0;

beforeAll(async () => {
  stack = await startStack({ services: ['messages', 'channels', 'uploads', 'events', 'worker'] });
});
afterAll(() => stack.close());

/** The path with plausible values for its parameters (the caller's own id and email where one fits). */
function concretePath(path: string, caller: TestUser): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (name === 'realm_id_str') return String(stack.realm.id);
    if (name === 'filename') return 'AbCdEf/file.txt';
    if (name === 'email') return encodeURIComponent(caller.email);
    if (name === 'user_id_or_email' || name === 'user_id') return String(caller.id);
    if (name === 'emoji_name') return 'no_such_emoji';
    return '1';
  });
}

/** The verdict of one call: whether the server said it has no such endpoint. */
async function isMissing(caller: TestUser, method: string, path: string) {
  const response = await caller.client.request(method, path, {}, { validate: false });
  const { msg } = (response.body ?? {}) as { msg?: string };
  return {
    status: response.status,
    missing: response.status === 405 || (response.status === 404 && msg === 'Endpoint does not exist'),
  };
}

test('the check itself: an unknown path, and a known path with an unknown method, are missing', async () => {
  const caller = await stack.createUser({ email: `coverage${++counter}@example.com`, role: Role.OWNER });
  expect(await isMissing(caller, 'GET', '/api/v1/no_such_endpoint')).toEqual({ status: 404, missing: true });
  expect(await isMissing(caller, 'PUT', '/api/v1/users/me')).toEqual({ status: 405, missing: true });
});

test.each(operations().map((op) => [`${op.method} ${op.path}`, op] as const))('%s is an endpoint', async (_, op) => {
  const caller = await stack.createUser({ email: `coverage${++counter}@example.com`, role: Role.OWNER });
  const response = await caller.client.request(
    op.method,
    `/api/v1${concretePath(op.path, caller)}`,
    {},
    {
      validate: false,
    },
  );
  const { msg } = (response.body ?? {}) as { msg?: string };
  const missing = response.status === 405 || (response.status === 404 && msg === 'Endpoint does not exist');
  expect({ status: response.status, missing }).toEqual({ status: response.status, missing: false });
});
