// A real client: zulip-js (configured from a zuliprc, as its users do) creates channels,
// subscribes, updates a channel, lists topics, deletes a topic and sets topic visibility.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { Role } from '@teamchat/domain';
import { insertMessages, uniqueName } from './helpers';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zulip = require('zulip-js') as (config: { zuliprc: string }) => Promise<any>;

let stack: Stack;
let owner: TestUser;
let member: TestUser;
let dir: string;

beforeAll(async () => {
  stack = await startStack({ services: ['channels', 'worker'] });
  owner = await stack.createUser({ role: Role.OWNER });
  member = await stack.createUser({ role: Role.MEMBER });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zuliprc-'));
});
afterAll(async () => {
  fs.rmSync(dir, { recursive: true, force: true });
  await stack?.close();
});

async function clientFor(user: TestUser) {
  const file = path.join(dir, `${user.id}.zuliprc`);
  fs.writeFileSync(file, `[api]\nemail=${user.deliveryEmail}\nkey=${user.apiKey}\nsite=${stack.gatewayUrl}\n`);
  return zulip({ zuliprc: file });
}

test('channels, subscriptions, updates, topics and topic visibility through zulip-js', async () => {
  const client = await clientFor(owner);
  const name = uniqueName('zulip-js');

  const created = await client.users.me.subscriptions.add({
    subscriptions: [{ name, description: 'Made by **zulip-js**' }],
    principals: [owner.id, member.id],
  });
  expect(created).toMatchObject({ result: 'success', subscribed: { [owner.id]: [name], [member.id]: [name] } });

  const { stream_id: streamId } = await client.streams.getStreamId(name);
  expect(typeof streamId).toBe('number');
  const subs = await client.streams.subscriptions.retrieve({ include_subscribers: true });
  expect(subs.subscriptions.find((s: { name: string }) => s.name === name)).toMatchObject({
    rendered_description: '<p>Made by <strong>zulip-js</strong></p>',
  });

  // zulip-js sends PATCH parameters in the query string.
  const updated = await client.callEndpoint(`/streams/${streamId}`, 'PATCH', {
    description: 'Renamed by zulip-js',
    new_name: `${name}-renamed`,
    is_private: true,
  });
  expect(updated).toMatchObject({ result: 'success' });
  const streams = await client.streams.retrieve({ include_all: true });
  expect(streams.streams.find((s: { stream_id: number }) => s.stream_id === streamId)).toMatchObject({
    name: `${name}-renamed`,
    invite_only: true,
    description: 'Renamed by zulip-js',
  });

  await insertMessages(stack, {
    streamId,
    senderId: owner.id,
    topic: 'from zulip-js',
    count: 3,
    recipients: [owner.id, member.id],
  });
  const topics = await client.streams.topics.retrieve({ stream_id: streamId });
  expect(topics).toMatchObject({ result: 'success', topics: [{ name: 'from zulip-js' }] });

  const muted = await client.callEndpoint('/user_topics', 'POST', {
    stream_id: streamId,
    topic: 'from zulip-js',
    visibility_policy: 1,
  });
  expect(muted).toMatchObject({ result: 'success' });
  expect(
    await stack.db.userTopic.findFirstOrThrow({ where: { user_profile_id: owner.id, stream_id: streamId } }),
  ).toMatchObject({ visibility_policy: 1 });

  const deleted = await client.callEndpoint(`/streams/${streamId}/delete_topic`, 'POST', {
    topic_name: 'from zulip-js',
  });
  expect(deleted).toEqual({ result: 'success', msg: '', complete: true });
  expect((await client.streams.topics.retrieve({ stream_id: streamId })).topics).toEqual([]);

  const memberClient = await clientFor(member);
  const left = await memberClient.users.me.subscriptions.remove({ subscriptions: JSON.stringify([`${name}-renamed`]) });
  expect(left).toMatchObject({ result: 'success', removed: [`${name}-renamed`] });
  const archived = await client.streams.deleteById({ stream_id: streamId });
  expect(archived).toMatchObject({ result: 'success' });
});
