// Realm isolation: two organisations on one stack (the gateway tells them apart by the Host
// header). For every endpoint that takes an id or an email, an administrator of realm A naming
// an object of realm B gets exactly the answer a nonexistent object gets (the id itself aside),
// realm B's data is untouched, and no event of one realm reaches the other's queues.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JOB_QUEUES } from '@teamchat/bus';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { registerEventQueue, settleEvents, type ApiResponse, type EventQueue } from '@teamchat/testing';

let stack: Stack;
let uploadsDir: string;

/** Realm A's cast: whoever acts. */
let aOwner: TestUser;
let aMember: TestUser;
/** Realm B's cast and objects: what A must not reach. */
let bOwner: TestUser;
let bMember: TestUser;
const b = {} as {
  realmId: number;
  host: string;
  stream: { id: number; name: string };
  privateStream: { id: number; name: string };
  messageId: number;
  dmId: number;
  groupId: number;
  draftId: number;
  linkifierId: number;
  inviteId: number;
  folderId: number;
  profileFieldId: number;
  attachmentId: number;
  uploadUrl: string;
  queueId: string;
  fragment: string;
};
/** Realm A's own objects, for requests that combine an A object with a B one. */
const a = {} as { stream: { id: number; name: string }; groupId: number; messageId: number };

/** Ids no object has. */
const MISSING_ID = 1_999_999_999;

async function ok(response: Promise<ApiResponse>): Promise<any> {
  const answer = await response;
  if (answer.status !== 200) throw new Error(`fixture request failed: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

beforeAll(async () => {
  uploadsDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-isolation-'));
  stack = await startStack({
    services: ['messages', 'channels', 'uploads', 'events', 'worker'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: uploadsDir },
  });
  aOwner = await stack.createUser({ email: 'owner@a.example', fullName: 'A owner', role: Role.OWNER });
  aMember = await stack.createUser({ email: 'member@a.example', fullName: 'A member' });

  const host = `realm-b.${new URL(stack.gatewayUrl).host}`;
  const realmB = await stack.createRealm('realm-b', host);
  b.realmId = realmB.id;
  b.host = host;
  bOwner = await stack.createUser({ realm: realmB, email: 'owner@b.example', fullName: 'B owner', role: Role.OWNER });
  bMember = await stack.createUser({ realm: realmB, email: 'member@b.example', fullName: 'B member' });

  // Realm B's objects, made through B's own API.
  await ok(
    bOwner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'b-general' }],
      principals: [bOwner.id, bMember.id],
    }),
  );
  await ok(
    bOwner.client.post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'b-secret' }], invite_only: true }),
  );
  b.stream = {
    id: (await ok(bOwner.client.get('/api/v1/get_stream_id', { stream: 'b-general' }))).stream_id,
    name: 'b-general',
  };
  b.privateStream = {
    id: (await ok(bOwner.client.get('/api/v1/get_stream_id', { stream: 'b-secret' }))).stream_id,
    name: 'b-secret',
  };
  b.messageId = (
    await ok(
      bOwner.client.post('/api/v1/messages', {
        type: 'stream',
        to: b.stream.id,
        topic: 'b-topic',
        content: 'realm B only',
      }),
    )
  ).id;
  b.dmId = (
    await ok(bOwner.client.post('/api/v1/messages', { type: 'direct', to: [bMember.id], content: 'B secret DM' }))
  ).id;
  b.groupId = (
    await ok(
      bOwner.client.post('/api/v1/user_groups/create', { name: 'b-team', description: 'B', members: [bMember.id] }),
    )
  ).group_id;
  b.draftId = (
    await ok(
      bOwner.client.post('/api/v1/drafts', {
        drafts: [{ type: 'stream', to: [b.stream.id], topic: 't', content: 'B draft' }],
      }),
    )
  ).ids[0];
  b.linkifierId = (
    await ok(
      bOwner.client.post('/api/v1/realm/filters', {
        pattern: '#B(?P<id>[0-9]+)',
        url_template: 'https://b.example/{id}',
      }),
    )
  ).id;
  await ok(bOwner.client.post('/api/v1/invites/multiuse', {}));
  b.inviteId = (await stack.db.multiuseInvite.findFirstOrThrow({ where: { realm_id: realmB.id } })).id;
  b.folderId = (
    await ok(bOwner.client.post('/api/v1/channel_folders/create', { name: 'B folder', description: '' }))
  ).channel_folder_id;
  b.profileFieldId = (
    await ok(bOwner.client.post('/api/v1/realm/profile_fields', { name: 'B field', field_type: 1 }))
  ).id;
  b.fragment = 'narrow/channel/b-only';
  await ok(bOwner.client.post('/api/v1/navigation_views', { fragment: b.fragment, is_pinned: true, name: 'B view' }));
  const form = new FormData();
  form.append('file', new Blob(['realm B bytes']), 'b-secret.txt');
  const encoded = new Request('http://multipart.invalid', { method: 'POST', body: form });
  const upload = await bOwner.client.post(
    '/api/v1/user_uploads',
    {},
    {
      body: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    },
  );
  b.uploadUrl = upload.body.url;
  b.attachmentId = (await ok(bOwner.client.get('/api/v1/attachments'))).attachments[0].id;
  b.queueId = (await ok(bOwner.client.post('/api/v1/register', { event_types: ['message'] }))).queue_id;

  // Realm A's own.
  await ok(
    aOwner.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'a-general' }],
      principals: [aOwner.id, aMember.id],
    }),
  );
  a.stream = {
    id: (await ok(aOwner.client.get('/api/v1/get_stream_id', { stream: 'a-general' }))).stream_id,
    name: 'a-general',
  };
  a.groupId = (
    await ok(
      aOwner.client.post('/api/v1/user_groups/create', { name: 'a-team', description: 'A', members: [aMember.id] }),
    )
  ).group_id;
  a.messageId = (
    await ok(
      aOwner.client.post('/api/v1/messages', { type: 'stream', to: a.stream.id, topic: 'a-topic', content: 'realm A' }),
    )
  ).id;

  bFingerprint = await fingerprint(realmB.id);
});

afterAll(async () => {
  await stack.deps.jobs.queue(JOB_QUEUES.uploadsCleanup).obliterate({ force: true });
  await stack.close();
  await fs.promises.rm(uploadsDir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ the comparison

/** An answer with the object's key replaced, so "Invalid user ID: 12" equals "Invalid user ID: 1999999999". */
function normalised(response: ApiResponse, key: string | number) {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // Whole tokens only: key 1 must not rewrite the 1 of 10000000000000000.
  const pattern = new RegExp(
    `(?<![0-9A-Za-z])(${escape(String(key))}|${escape(encodeURIComponent(String(key)))})(?![0-9A-Za-z])`,
    'g',
  );
  return { status: response.status, body: response.raw.toString('utf8').replace(pattern, '<key>') };
}

/**
 * Sends the request naming realm B's object and naming a nonexistent one: the answers must
 * be identical (key aside) and must not be a success that leaks B's data.
 */
async function expectSameAsMissing(
  request: (key: any) => Promise<ApiResponse>,
  foreignKey: string | number,
  missingKey: string | number,
) {
  const foreign = await request(foreignKey);
  const missing = await request(missingKey);
  expect(normalised(foreign, foreignKey)).toEqual(normalised(missing, missingKey));
  return { foreign, missing };
}

/** Cases: [name, request(key), foreign key (read lazily), missing key]. */
type Key = string | number;
type Case = [string, (key: any) => Promise<ApiResponse>, () => Key, Key | (() => Key)];

function isolationCases(title: string, cases: () => Case[]) {
  describe(title, () => {
    // Names are known up front; the cases are built once the fixtures exist.
    const names = cases().map((entry) => entry[0]);
    for (const [index, name] of names.entries()) {
      test(name, async () => {
        const [, request, foreignKey, missingKey] = cases()[index];
        const key = foreignKey();
        const { foreign } = await expectSameAsMissing(
          request,
          key,
          typeof missingKey === 'function' ? missingKey() : missingKey,
        );
        // Nothing of realm B's beyond what the request itself said.
        expect(normalised(foreign, key).body).not.toMatch(
          /realm B only|B secret DM|B draft|realm B bytes|b-secret|b-general|B field|B view|b\.example/,
        );
      });
    }
  });
}

// ------------------------------------------------------------------ users, groups, invitations, configuration

const A = () => aOwner.client;

isolationCases('users service', () => [
  ['GET /users/{id}', (id) => A().get(`/api/v1/users/${id}`), () => bMember.id, MISSING_ID],
  [
    'GET /users/{real email}',
    (email) => A().get(`/api/v1/users/${encodeURIComponent(email)}`),
    () => bMember.deliveryEmail,
    'nobody@b.example',
  ],
  [
    'GET /users/{placeholder email with a B user id}',
    (email) => A().get(`/api/v1/users/${encodeURIComponent(email)}`),
    () => `user${bMember.id}@${new URL(stack.gatewayUrl).hostname}`,
    () => `user${MISSING_ID}@${new URL(stack.gatewayUrl).hostname}`,
  ],
  [
    'PATCH /users/{id}',
    (id) => A().patch(`/api/v1/users/${id}`, { full_name: 'Hijacked' }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'PATCH /users/{id} role',
    (id) => A().patch(`/api/v1/users/${id}`, { role: Role.GUEST }),
    () => bMember.id,
    MISSING_ID,
  ],
  ['GET /user_groups/{id}/members', (id) => A().get(`/api/v1/user_groups/${id}/members`), () => b.groupId, MISSING_ID],
  [
    'GET /user_groups/{id}/subgroups',
    (id) => A().get(`/api/v1/user_groups/${id}/subgroups`),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'GET /user_groups/{id}/members/{user_id} (B group)',
    (id) => A().get(`/api/v1/user_groups/${id}/members/${aMember.id}`),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'GET /user_groups/{id}/members/{user_id} (B user)',
    (id) => A().get(`/api/v1/user_groups/${a.groupId}/members/${id}`),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'PATCH /user_groups/{id}',
    (id) => A().patch(`/api/v1/user_groups/${id}`, { description: 'hijacked' }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/{id}/members add (B group)',
    (id) => A().post(`/api/v1/user_groups/${id}/members`, { add: [aMember.id] }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/{id}/members add (B user)',
    (id) => A().post(`/api/v1/user_groups/${a.groupId}/members`, { add: [id] }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /user_groups/{id}/members add_subgroups (B group)',
    (id) => A().post(`/api/v1/user_groups/${a.groupId}/members`, { add_subgroups: [id] }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/{id}/subgroups add (B group)',
    (id) => A().post(`/api/v1/user_groups/${a.groupId}/subgroups`, { add: [id] }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/{id}/deactivate',
    (id) => A().post(`/api/v1/user_groups/${id}/deactivate`),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/create members (B user)',
    (id) => A().post('/api/v1/user_groups/create', { name: `x${id}`, description: '', members: [id] }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /user_groups/create subgroups (B group)',
    (id) => A().post('/api/v1/user_groups/create', { name: `y${id}`, description: '', members: [], subgroups: [id] }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/create can_manage_group (B group)',
    (id) =>
      A().post('/api/v1/user_groups/create', { name: `z${id}`, description: '', members: [], can_manage_group: id }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'POST /user_groups/create can_manage_group (anonymous, B user)',
    (id) =>
      A().post('/api/v1/user_groups/create', {
        name: `w${id}`,
        description: '',
        members: [],
        can_manage_group: { direct_members: [id], direct_subgroups: [] },
      }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'PATCH /user_groups/{id} can_mention_group (B group)',
    (id) => A().patch(`/api/v1/user_groups/${a.groupId}`, { can_mention_group: { new: id } }),
    () => b.groupId,
    MISSING_ID,
  ],
  ['DELETE /invites/multiuse/{id}', (id) => A().delete(`/api/v1/invites/multiuse/${id}`), () => b.inviteId, MISSING_ID],
  [
    'POST /invites/multiuse stream_ids (B channel)',
    (id) => A().post('/api/v1/invites/multiuse', { stream_ids: [id] }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /invites/multiuse group_ids (B group)',
    (id) => A().post('/api/v1/invites/multiuse', { group_ids: [id] }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'PATCH /realm/filters/{id}',
    (id) =>
      A().patch(`/api/v1/realm/filters/${id}`, { pattern: '#Z(?P<id>[0-9]+)', url_template: 'https://z.example/{id}' }),
    () => b.linkifierId,
    MISSING_ID,
  ],
  ['DELETE /realm/filters/{id}', (id) => A().delete(`/api/v1/realm/filters/${id}`), () => b.linkifierId, MISSING_ID],
  [
    'PATCH /realm/linkifiers (B id in the order)',
    (id) => A().patch('/api/v1/realm/linkifiers', { ordered_linkifier_ids: [id] }),
    () => b.linkifierId,
    MISSING_ID,
  ],
  [
    'PATCH /users/me/profile_data (B field)',
    (id) => A().patch('/api/v1/users/me/profile_data', { data: [{ id, value: 'x' }] }),
    () => b.profileFieldId,
    MISSING_ID,
  ],
  [
    'DELETE /users/me/profile_data (B field)',
    (id) => A().delete('/api/v1/users/me/profile_data', { data: [id] }),
    () => b.profileFieldId,
    MISSING_ID,
  ],
  [
    'PATCH /navigation_views/{fragment}',
    (fragment) => A().patch(`/api/v1/navigation_views/${fragment}`, { is_pinned: false }),
    () => b.fragment,
    'narrow/channel/none-such',
  ],
  [
    'DELETE /navigation_views/{fragment}',
    (fragment) => A().delete(`/api/v1/navigation_views/${fragment}`),
    () => b.fragment,
    'narrow/channel/none-such',
  ],
]);

// ------------------------------------------------------------------ channels

isolationCases('channels service', () => [
  ['GET /streams/{id}', (id) => A().get(`/api/v1/streams/${id}`), () => b.stream.id, MISSING_ID],
  [
    'PATCH /streams/{id}',
    (id) => A().patch(`/api/v1/streams/${id}`, { description: 'hijacked' }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'PATCH /streams/{id} (private)',
    (id) => A().patch(`/api/v1/streams/${id}`, { new_name: 'hijacked' }),
    () => b.privateStream.id,
    MISSING_ID,
  ],
  ['DELETE /streams/{id}', (id) => A().delete(`/api/v1/streams/${id}`), () => b.stream.id, MISSING_ID],
  ['GET /streams/{id}/members', (id) => A().get(`/api/v1/streams/${id}/members`), () => b.stream.id, MISSING_ID],
  [
    'POST /streams/{id}/delete_topic',
    (id) => A().post(`/api/v1/streams/${id}/delete_topic`, { topic_name: 'b-topic' }),
    () => b.stream.id,
    MISSING_ID,
  ],
  ['GET /users/me/{id}/topics', (id) => A().get(`/api/v1/users/me/${id}/topics`), () => b.stream.id, MISSING_ID],
  [
    'GET /users/{user_id}/subscriptions/{stream_id} (B channel)',
    (id) => A().get(`/api/v1/users/${aMember.id}/subscriptions/${id}`),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'GET /users/{user_id}/subscriptions/{stream_id} (B user)',
    (id) => A().get(`/api/v1/users/${id}/subscriptions/${a.stream.id}`),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'GET /get_stream_id (B name)',
    (name) => A().get('/api/v1/get_stream_id', { stream: name }),
    () => b.privateStream.name,
    'no-such-channel',
  ],
  [
    'POST /default_streams',
    (id) => A().post('/api/v1/default_streams', { stream_id: id }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'DELETE /default_streams',
    (id) => A().delete('/api/v1/default_streams', { stream_id: id }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /user_topics',
    (id) => A().post('/api/v1/user_topics', { stream_id: id, topic: 'b-topic', visibility_policy: 1 }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /users/me/subscriptions/properties',
    (id) =>
      A().post('/api/v1/users/me/subscriptions/properties', {
        subscription_data: [{ stream_id: id, property: 'pin_to_top', value: true }],
      }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /users/me/subscriptions principals (B user)',
    (id) => A().post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: a.stream.name }], principals: [id] }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /users/me/subscriptions principals (B email)',
    (email) =>
      A().post('/api/v1/users/me/subscriptions', { subscriptions: [{ name: a.stream.name }], principals: [email] }),
    () => bMember.deliveryEmail,
    'nobody@b.example',
  ],
  [
    'DELETE /users/me/subscriptions principals (B user)',
    (id) => A().delete('/api/v1/users/me/subscriptions', { subscriptions: [a.stream.name], principals: [id] }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'PATCH /channel_folders/{id}',
    (id) => A().patch(`/api/v1/channel_folders/${id}`, { description: 'hijacked' }),
    () => b.folderId,
    MISSING_ID,
  ],
  [
    'PATCH /streams/{id} folder_id (B folder)',
    (id) => A().patch(`/api/v1/streams/${a.stream.id}`, { folder_id: id }),
    () => b.folderId,
    MISSING_ID,
  ],
  [
    'PATCH /streams/{id} can_administer_channel_group (B group)',
    (id) => A().patch(`/api/v1/streams/${a.stream.id}`, { can_administer_channel_group: { new: id } }),
    () => b.groupId,
    MISSING_ID,
  ],
  [
    'PATCH /streams/{id} can_administer_channel_group (anonymous, B user)',
    (id) =>
      A().patch(`/api/v1/streams/${a.stream.id}`, {
        can_administer_channel_group: { new: { direct_members: [id], direct_subgroups: [] } },
      }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /users/me/subscriptions can_administer_channel_group (B group)',
    (id) =>
      A().post('/api/v1/users/me/subscriptions', {
        subscriptions: [{ name: `new-${id}` }],
        can_administer_channel_group: id,
      }),
    () => b.groupId,
    MISSING_ID,
  ],
]);

// ------------------------------------------------------------------ messages

isolationCases('messages service', () => [
  ['GET /messages/{id}', (id) => A().get(`/api/v1/messages/${id}`), () => b.messageId, MISSING_ID],
  ['GET /messages/{id} (a B direct message)', (id) => A().get(`/api/v1/messages/${id}`), () => b.dmId, MISSING_ID],
  [
    'POST /messages to a B channel id',
    (id) => A().post('/api/v1/messages', { type: 'stream', to: id, topic: 't', content: 'x' }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /messages to a B channel name',
    (name) => A().post('/api/v1/messages', { type: 'stream', to: name, topic: 't', content: 'x' }),
    () => b.stream.name,
    'no-such-channel',
  ],
  [
    'POST /messages direct to a B user id',
    (id) => A().post('/api/v1/messages', { type: 'direct', to: [id], content: 'x' }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /messages direct to a B user email',
    (email) => A().post('/api/v1/messages', { type: 'direct', to: [email], content: 'x' }),
    () => bMember.deliveryEmail,
    'nobody@b.example',
  ],
  [
    'POST /messages/flags add starred',
    (id) => A().post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'starred' }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'POST /messages/flags remove starred',
    (id) => A().post('/api/v1/messages/flags', { messages: [id], op: 'remove', flag: 'starred' }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'POST /messages/flags remove read',
    (id) => A().post('/api/v1/messages/flags', { messages: [id], op: 'remove', flag: 'read' }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'POST /messages/flags add read',
    (id) => A().post('/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'read' }),
    () => b.dmId,
    MISSING_ID,
  ],
  [
    'POST /messages/{id}/typing',
    (id) => A().post(`/api/v1/messages/${id}/typing`, { op: 'start' }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'POST /typing to a B user',
    (id) => A().post('/api/v1/typing', { op: 'start', to: [id] }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'POST /typing in a B channel',
    (id) => A().post('/api/v1/typing', { type: 'channel', op: 'start', stream_id: id, topic: 't' }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'GET /messages narrow channel (B id)',
    (id) =>
      A().get('/api/v1/messages', {
        anchor: 'newest',
        num_before: 10,
        num_after: 0,
        narrow: [{ operator: 'channel', operand: id }],
      }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'GET /messages narrow id (B message)',
    (id) =>
      A().get('/api/v1/messages', {
        anchor: 'newest',
        num_before: 10,
        num_after: 0,
        narrow: [{ operator: 'id', operand: id }],
      }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'GET /messages narrow dm (B user)',
    (id) =>
      A().get('/api/v1/messages', {
        anchor: 'newest',
        num_before: 10,
        num_after: 0,
        narrow: [{ operator: 'dm', operand: [id] }],
      }),
    () => bMember.id,
    MISSING_ID,
  ],
  [
    'GET /messages anchor (B message)',
    (id) => A().get('/api/v1/messages', { anchor: id, num_before: 0, num_after: 0 }),
    () => b.messageId,
    MISSING_ID,
  ],
  [
    'POST /messages/flags/narrow channel (B id)',
    (id) =>
      A().post('/api/v1/messages/flags/narrow', {
        anchor: 'newest',
        num_before: 10,
        num_after: 0,
        narrow: [{ operator: 'channel', operand: id }],
        op: 'add',
        flag: 'starred',
      }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /mark_stream_as_read',
    (id) => A().post('/api/v1/mark_stream_as_read', { stream_id: id }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /mark_topic_as_read',
    (id) => A().post('/api/v1/mark_topic_as_read', { stream_id: id, topic_name: 'b-topic' }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'PATCH /drafts/{id}',
    (id) => A().patch(`/api/v1/drafts/${id}`, { draft: { type: '', to: [], topic: '', content: 'hijacked' } }),
    () => b.draftId,
    MISSING_ID,
  ],
  ['DELETE /drafts/{id}', (id) => A().delete(`/api/v1/drafts/${id}`), () => b.draftId, MISSING_ID],
  [
    'POST /drafts to a B channel',
    (id) => A().post('/api/v1/drafts', { drafts: [{ type: 'stream', to: [id], topic: 't', content: 'x' }] }),
    () => b.stream.id,
    MISSING_ID,
  ],
  [
    'POST /drafts to a B user',
    (id) => A().post('/api/v1/drafts', { drafts: [{ type: 'private', to: [id], topic: '', content: 'x' }] }),
    () => bMember.id,
    MISSING_ID,
  ],
]);

// ------------------------------------------------------------------ uploads and event queues

isolationCases('uploads and events', () => [
  ['DELETE /attachments/{id}', (id) => A().delete(`/api/v1/attachments/${id}`), () => b.attachmentId, MISSING_ID],
  [
    'GET /user_uploads/{B path}',
    (url) => A().get(url, {}, { validate: false }),
    () => b.uploadUrl,
    () => `/user_uploads/${b.realmId}/ab/cdefghijklmnopqrstuvwxyz/none.txt`,
  ],
  [
    'GET /user_uploads/download/{B path}',
    (url) => A().get(url, {}, { validate: false }),
    () => b.uploadUrl.replace('/user_uploads/', '/user_uploads/download/'),
    () => `/user_uploads/download/${b.realmId}/ab/cdefghijklmnopqrstuvwxyz/none.txt`,
  ],
  [
    'GET /user_uploads/{A realm id}/{rest of a B path}',
    (url) => A().get(url, {}, { validate: false }),
    () => b.uploadUrl.replace(`/user_uploads/${b.realmId}/`, `/user_uploads/${stack.realm.id}/`),
    () => `/user_uploads/${stack.realm.id}/ab/cdefghijklmnopqrstuvwxyz/none.txt`,
  ],
  [
    'GET /events (B queue)',
    (id) => A().get('/api/v1/events', { queue_id: id, last_event_id: -1, dont_block: true }),
    () => b.queueId,
    '1700000000:99999',
  ],
  [
    'DELETE /events (B queue)',
    (id) => A().delete('/api/v1/events', { queue_id: id }),
    () => b.queueId,
    '1700000000:99999',
  ],
]);

describe('credentials', () => {
  test("a realm B key is refused on realm A's host (Zulip's wrong-subdomain answer), and serves nothing", async () => {
    const foreign = await stack
      .client({ email: bMember.deliveryEmail, apiKey: bMember.apiKey })
      .get('/api/v1/users/me');
    expect(foreign.status).toBe(401);
    expect(foreign.body).toEqual({
      result: 'error',
      msg: 'Account is not associated with this subdomain',
      code: 'UNAUTHORIZED',
    });
    const upload = await stack
      .client({ email: bOwner.deliveryEmail, apiKey: bOwner.apiKey })
      .get(b.uploadUrl, {}, { validate: false });
    expect(upload.status).toBe(401);
    expect(upload.raw.toString()).not.toContain('realm B bytes');
  });

  test('uploads of realm B are not served with a realm A key in the api_key parameter', async () => {
    const response = await stack.anonymous().get(b.uploadUrl, { api_key: aOwner.apiKey }, { validate: false });
    expect(response.status).not.toBe(200);
    expect(response.raw.toString()).not.toContain('realm B bytes');
  });
});

// ------------------------------------------------------------------ realm B is untouched

let bFingerprint: string;

/** Everything of realm B that a request from A could have changed. */
async function fingerprint(realmId: number): Promise<string> {
  const db = stack.db;
  const users = await db.userProfile.findMany({
    where: { realm_id: realmId },
    select: { id: true, full_name: true, role: true, is_active: true },
    orderBy: { id: 'asc' },
  });
  const userIds = users.map((user) => user.id);
  const parts = await Promise.all([
    db.stream.findMany({ where: { realm_id: realmId }, orderBy: { id: 'asc' } }),
    db.message.findMany({
      where: { realm_id: realmId },
      select: { id: true, content: true, topic: true, stream_id: true },
      orderBy: { id: 'asc' },
    }),
    db.userMessage.findMany({
      where: { user_profile_id: { in: userIds } },
      select: { user_profile_id: true, message_id: true, flags: true },
      orderBy: { id: 'asc' },
    }),
    db.userGroup.findMany({
      where: { realm_id: realmId },
      select: { id: true, name: true, description: true, deactivated: true },
      orderBy: { id: 'asc' },
    }),
    db.userGroupMembership.findMany({
      where: { user_profile_id: { in: userIds } },
      orderBy: [{ user_group_id: 'asc' }, { user_profile_id: 'asc' }],
    }),
    db.groupSetting.findMany({
      where: { realm_id: realmId },
      orderBy: [{ owner_kind: 'asc' }, { owner_id: 'asc' }, { name: 'asc' }],
    }),
    db.subscription.findMany({ where: { user_profile_id: { in: userIds } }, orderBy: { id: 'asc' } }),
    db.draft.findMany({ where: { user_profile_id: { in: userIds } }, orderBy: { id: 'asc' } }),
    db.linkifier.findMany({ where: { realm_id: realmId }, orderBy: { id: 'asc' } }),
    db.multiuseInvite.findMany({
      where: { realm_id: realmId },
      select: { id: true, status: true },
      orderBy: { id: 'asc' },
    }),
    db.channelFolder.findMany({ where: { realm_id: realmId }, orderBy: { id: 'asc' } }),
    db.attachment.findMany({
      where: { realm_id: realmId },
      select: { id: true, path_id: true },
      orderBy: { id: 'asc' },
    }),
    db.navigationView.findMany({ where: { user_profile_id: { in: userIds } }, orderBy: { id: 'asc' } }),
    db.userTopic.findMany({ where: { user_profile_id: { in: userIds } }, orderBy: { id: 'asc' } }),
  ]);
  return JSON.stringify([users, ...parts], (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
}

describe('afterwards', () => {
  test("realm B's data is exactly as before every request from realm A", async () => {
    expect(await fingerprint(b.realmId)).toBe(bFingerprint);
  });

  test("realm B's event queue still works for its owner", async () => {
    const response = await bOwner.client.get('/api/v1/events', {
      queue_id: b.queueId,
      last_event_id: -1,
      dont_block: true,
    });
    expect(response.status).toBe(200);
  });
});

// ------------------------------------------------------------------ events stay in their realm

describe('events', () => {
  test('changes in realm A reach realm A’s queues and none of realm B’s, and the other way round', async () => {
    const aQueues: EventQueue[] = [await registerEventQueue(aOwner.client), await registerEventQueue(aMember.client)];
    const bQueues: EventQueue[] = [await registerEventQueue(bOwner.client), await registerEventQueue(bMember.client)];
    for (const queue of [...aQueues, ...bQueues]) await queue.drain();

    // A varied workload in realm A, by an owner (realm-wide audiences included).
    await ok(A().post('/api/v1/messages', { type: 'stream', to: a.stream.id, topic: 'evt', content: 'realm A event' }));
    await ok(A().post('/api/v1/messages', { type: 'direct', to: [aMember.id], content: 'A DM' }));
    await ok(
      A().post('/api/v1/users/me/subscriptions', {
        subscriptions: [{ name: 'a-events' }],
        principals: [aOwner.id, aMember.id],
      }),
    );
    await ok(A().patch(`/api/v1/streams/${a.stream.id}`, { description: 'A changed' }));
    await ok(
      A().post('/api/v1/user_groups/create', { name: 'a-events-group', description: '', members: [aMember.id] }),
    );
    await ok(A().patch(`/api/v1/users/${aMember.id}`, { full_name: 'A member renamed' }));
    await ok(
      A().post('/api/v1/realm/filters', { pattern: '#A(?P<id>[0-9]+)', url_template: 'https://a.example/{id}' }),
    );
    await ok(A().post('/api/v1/typing', { op: 'start', to: [aMember.id] }));
    await ok(A().post('/api/v1/messages/flags', { messages: [a.messageId], op: 'add', flag: 'starred' }));
    await ok(A().post('/api/v1/drafts', { drafts: [{ type: '', to: [], topic: '', content: 'A draft' }] }));
    await ok(A().post('/api/v1/channel_folders/create', { name: 'A folder', description: '' }));
    await ok(A().post('/api/v1/invites/multiuse', {}));
    await ok(
      A().post('/api/v1/navigation_views', { fragment: 'narrow/channel/a-only', is_pinned: true, name: 'A view' }),
    );
    await ok(A().post('/api/v1/users/me/presence', { status: 'active' }));
    await settleEvents(stack);

    const aReceived = (await Promise.all(aQueues.map((queue) => queue.drain()))).flat();
    const bReceived = (await Promise.all(bQueues.map((queue) => queue.drain()))).flat();
    expect(aReceived.length).toBeGreaterThan(10);
    expect(bReceived).toEqual([]);

    // And the other way round.
    await ok(
      bOwner.client.post('/api/v1/messages', {
        type: 'stream',
        to: b.stream.id,
        topic: 'evt',
        content: 'realm B event',
      }),
    );
    await ok(
      bOwner.client.post('/api/v1/user_groups/create', {
        name: 'b-events-group',
        description: '',
        members: [bMember.id],
      }),
    );
    await ok(bOwner.client.patch(`/api/v1/users/${bMember.id}`, { full_name: 'B member renamed' }));
    await ok(
      bOwner.client.post('/api/v1/users/me/subscriptions', {
        subscriptions: [{ name: 'b-events' }],
        principals: [bOwner.id, bMember.id],
      }),
    );
    await settleEvents(stack);
    expect((await Promise.all(bQueues.map((queue) => queue.drain()))).flat().length).toBeGreaterThan(3);
    expect((await Promise.all(aQueues.map((queue) => queue.drain()))).flat()).toEqual([]);

    // The fixtures changed realm B on purpose; its fingerprint moves on.
    bFingerprint = await fingerprint(b.realmId);
  });
});
