// The allowed email domains (Zulip's /realm/domains): owners add, change and remove them; every
// change is a realm_domains event to everyone; register's realm_domains lists them.
import { startStack, type Stack } from '@teamchat/stack';
import { captureEvents, expectError, ofType, registerEventQueue, type ApiClient } from '@teamchat/testing';
import { runCommand } from '../src/manage';
import { activeIds, createCast, type Cast } from './helpers';

let stack: Stack;
let cast: Cast;
beforeAll(async () => {
  stack = await startStack({ services: ['events'] });
  cast = await createCast(stack);
});
afterAll(() => stack.close());

const registeredDomains = async (client: ApiClient) =>
  (await registerEventQueue(client, { fetch_event_types: ['realm_domains'] })).registration.realm_domains;

test('owners add, change and remove domains; everyone sees them and gets the events', async () => {
  expect((await cast.member.client.get('/api/v1/realm/domains')).body.domains).toEqual([]);
  const queue = await registerEventQueue(cast.member.client, { event_types: ['realm_domains', 'realm'] });

  const added = await captureEvents(stack, async () => {
    const response = await cast.owner.client.post('/api/v1/realm/domains', {
      domain: ' Example.COM ',
      allow_subdomains: false,
    });
    expect(response.body).toEqual({ result: 'success', msg: '', new_domain: [expect.any(Number), 'example.com'] });
  });
  const addEvent = {
    type: 'realm_domains',
    op: 'add',
    realm_domain: { domain: 'example.com', allow_subdomains: false },
  };
  expect(ofType(added, 'realm_domains').map((e) => e.event)).toEqual([addEvent]);
  expect(ofType(added, 'realm_domains')[0].recipientIds).toEqual(await activeIds(stack));
  await cast.owner.client.post('/api/v1/realm/domains', { domain: 'zulip.test', allow_subdomains: true });

  const changeEvent = {
    type: 'realm_domains',
    op: 'change',
    realm_domain: { domain: 'example.com', allow_subdomains: true },
  };
  const changed = await captureEvents(stack, async () => {
    const response = await cast.owner.client.patch('/api/v1/realm/domains/example.com', { allow_subdomains: true });
    expect(response.body).toEqual({ result: 'success', msg: '' });
  });
  expect(ofType(changed, 'realm_domains').map((e) => e.event)).toEqual([changeEvent]);

  const listed = [
    { domain: 'example.com', allow_subdomains: true },
    { domain: 'zulip.test', allow_subdomains: true },
  ];
  expect((await cast.guest.client.get('/api/v1/realm/domains')).body.domains).toEqual(listed);
  expect(await registeredDomains(cast.member.client)).toEqual(listed);

  // Restricting emails to the domains; removing the last one lifts the restriction.
  expect((await cast.owner.client.patch('/api/v1/realm', { emails_restricted_to_domains: true })).status).toBe(200);
  await cast.owner.client.delete('/api/v1/realm/domains/zulip.test');
  const removed = await captureEvents(stack, async () => {
    const response = await cast.owner.client.delete('/api/v1/realm/domains/example.com');
    expect(response.body).toEqual({ result: 'success', msg: '' });
  });
  expect(removed.map((e) => e.event)).toEqual([
    { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false },
    { type: 'realm_domains', op: 'remove', domain: 'example.com' },
  ]);
  expect(await registeredDomains(cast.member.client)).toEqual([]);
  const restricted = (await registerEventQueue(cast.member.client, { fetch_event_types: ['realm'] })).registration
    .realm_emails_restricted_to_domains;
  expect(restricted).toBe(false);

  // The member's queue got each of them (checked against zulip.yaml by the client).
  const received = (await queue.next(7)).map(({ id: _id, ...event }) => event);
  expect(received).toEqual([
    addEvent,
    { type: 'realm_domains', op: 'add', realm_domain: { domain: 'zulip.test', allow_subdomains: true } },
    changeEvent,
    { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: true },
    { type: 'realm_domains', op: 'remove', domain: 'zulip.test' },
    { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false },
    { type: 'realm_domains', op: 'remove', domain: 'example.com' },
  ]);
});

test('only owners change domains; bad domains get Zulip’s errors', async () => {
  for (const user of [cast.admin, cast.member]) {
    expectError(
      await user.client.post('/api/v1/realm/domains', { domain: 'example.org', allow_subdomains: false }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expectError(
      await user.client.patch('/api/v1/realm/domains/example.org', { allow_subdomains: true }),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
    expectError(
      await user.client.delete('/api/v1/realm/domains/example.org'),
      400,
      'UNAUTHORIZED_PRINCIPAL',
      'Must be an organization owner',
    );
  }
  const post = (domain: string) => cast.owner.client.post('/api/v1/realm/domains', { domain, allow_subdomains: false });
  const invalid: [string, string][] = [
    ['', "Invalid domain: Domain can't be empty."],
    ['localhost', 'Invalid domain: Domain must have at least one dot (.)'],
    ['.example.org', 'Invalid domain: Domain cannot start or end with a dot (.)'],
    ['example..org', "Invalid domain: Consecutive '.' are not allowed."],
    ['-example.org', "Invalid domain: Subdomains cannot start or end with a '-'."],
    ['exa_mple.org', "Invalid domain: Domain can only have letters, numbers, '.' and '-'s."],
    [`${'a'.repeat(252)}.org`, 'Invalid domain: Domain is too long'],
  ];
  for (const [domain, msg] of invalid) expectError(await post(domain), 400, 'BAD_REQUEST', msg);
  expectError(
    await cast.owner.client.post('/api/v1/realm/domains', { domain: 'example.org' }),
    400,
    'REQUEST_VARIABLE_MISSING',
    "Missing 'allow_subdomains' argument",
  );

  expect((await post('example.org')).status).toBe(200);
  expectError(
    await post('EXAMPLE.org'),
    400,
    'BAD_REQUEST',
    'The domain example.org is already a part of your organization.',
  );
  expectError(
    await cast.owner.client.patch('/api/v1/realm/domains/nope.org', { allow_subdomains: true }),
    400,
    'BAD_REQUEST',
    'No entry found for domain nope.org.',
  );
  expectError(
    await cast.owner.client.delete('/api/v1/realm/domains/nope.org'),
    400,
    'BAD_REQUEST',
    'No entry found for domain nope.org.',
  );
  expect(await registeredDomains(cast.guest.client)).toEqual([{ domain: 'example.org', allow_subdomains: false }]);
});

test('with emails restricted to the domains, invitations outside them are refused', async () => {
  await cast.owner.client.post('/api/v1/realm/domains', { domain: 'restricted.test', allow_subdomains: true });
  await cast.owner.client.post('/api/v1/realm/domains', { domain: 'exact.test', allow_subdomains: false });
  expect((await cast.owner.client.patch('/api/v1/realm', { emails_restricted_to_domains: true })).status).toBe(200);
  const invite = (emails: string) =>
    cast.owner.client.post('/api/v1/invites', { invitee_emails: emails, stream_ids: '[]' });

  const refused = await invite(
    'a@restricted.test, b@team.restricted.test, c@other.test, d+x@exact.test, e@sub.exact.test',
  );
  expectError(refused, 400, 'INVITATION_FAILED', "Some emails did not validate, so we didn't send any invitations.");
  expect(refused.body.errors).toEqual([
    ['c@other.test', 'Outside your domain.', false],
    ['d+x@exact.test', 'Email addresses containing + are not allowed.', false],
    ['e@sub.exact.test', 'Outside your domain.', false],
  ]);
  expect((await invite('a@restricted.test, b@team.restricted.test, f@exact.test')).status).toBe(200);

  // Joining through a reusable link: Zulip's registration form wording.
  const link = (await cast.owner.client.post('/api/v1/invites/multiuse', {})).body.invite_link as string;
  const join = (email: string) =>
    stack.anonymous().post('/api/v1/invites/multiuse/accept', {
      key: link.split('/').filter(Boolean).pop()!,
      email,
      full_name: 'New Comer',
      password: 'a good password',
    });
  expectError(
    await join('newcomer@other.test'),
    400,
    'BAD_REQUEST',
    'Your email address, newcomer@other.test, is not in one of the domains that are allowed to register for accounts in this organization.',
  );
  expectError(
    await join('new+comer@exact.test'),
    400,
    'BAD_REQUEST',
    'Email addresses containing + are not allowed in this organization.',
  );
  expect((await join('newcomer@team.restricted.test')).status).toBe(200);

  // An administrator creating an account (POST /users): Zulip's create_user_backend wording.
  const grant = ['change-user-role', '--realm', stack.realm.host, '--email', cast.owner.deliveryEmail];
  await runCommand(stack.deps, [...grant, '--permission', 'can_create_users'], () => {});
  const create = (email: string) =>
    cast.owner.client.post('/api/v1/users', { email, password: 'a good password', full_name: 'Created One' });
  expectError(
    await create('created@other.test'),
    400,
    'BAD_REQUEST',
    "Email 'created@other.test' not allowed in this organization",
  );
  expectError(
    await create('created+x@exact.test'),
    400,
    'BAD_REQUEST',
    'Email addresses containing + are not allowed.',
  );
  expect((await create('created@exact.test')).status).toBe(200);

  // Unrestricted again: any address may be invited.
  await cast.owner.client.patch('/api/v1/realm', { emails_restricted_to_domains: false });
  expect((await invite('c@other.test')).status).toBe(200);
});
