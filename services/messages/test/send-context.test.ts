// The send's one read statement (src/lib/send-context.ts) gives the sender, the realm and the
// channel as Prisma reads them: it reads whole rows as JSON and types them back by hand (dates,
// bigints), so a column of another type added to these tables shows up here first.
import { VisibilityPolicy } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { loadSendContext } from '../src/lib/send-context';

let stack: Stack;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  stack = await startStack({ services: ['messages'] });
  alice = await stack.createUser({ fullName: 'Alice Liddell' });
  bob = await stack.createUser({ fullName: 'Bob Dylan' });
});
afterAll(() => stack.close());

test('sender, realm and channel equal the rows Prisma reads; subscribers, mutes, alert words and the id', async () => {
  const stream = await stack.createStream({ name: 'context', creatorId: alice.id, subscribers: [alice.id, bob.id] });
  await stack.db.mutedUser.create({ data: { user_profile_id: bob.id, muted_user_id: alice.id } });
  await stack.db.alertWord.create({ data: { realm_id: stack.realm.id, user_profile_id: bob.id, word: 'kettle' } });
  // A realm with a quota exercises the bigint column.
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { upload_quota_bytes: 5_000_000_000n } });

  for (const indicator of [stream.id, 'CONTEXT']) {
    const context = await loadSendContext(stack.db, {
      senderId: alice.id,
      realmId: stack.realm.id,
      stream: indicator,
      topic: 'tea',
      alertWordUsers: [],
    });
    expect(context.sender).toEqual(await stack.db.userProfile.findUniqueOrThrow({ where: { id: alice.id } }));
    expect(context.realm).toEqual(await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } }));
    expect(context.stream).toEqual(await stack.db.stream.findUniqueOrThrow({ where: { id: stream.id } }));
    expect(context.subscriberIds).toEqual([alice.id, bob.id].sort((a, b) => a - b));
    expect(context.notifiableSubscriberIds).toEqual(new Set());
    expect(context.rights).toEqual({ own: { canSend: true, subscribed: true }, owner: null });
    expect([...context.mutedSenderFor]).toEqual([bob.id]);
    expect(context.alertWords).toEqual([{ user_profile_id: bob.id, word: 'kettle' }]);
    expect(Number.isInteger(context.id)).toBe(true);
  }

  // A direct message: no channel, the alert words of the users named.
  const direct = await loadSendContext(stack.db, {
    senderId: alice.id,
    realmId: stack.realm.id,
    stream: null,
    topic: '',
    alertWordUsers: [alice.id, bob.id],
  });
  expect(direct.stream).toBeNull();
  expect(direct.subscriberIds).toEqual([]);
  expect(direct.alertWords).toEqual([{ user_profile_id: bob.id, word: 'kettle' }]);
});

test('the subscribers who could be notified without a mention: by subscription, own default or a followed topic', async () => {
  const [bySubscription, byDefault, following, elsewhere, inactive] = await Promise.all(
    ['sub', 'default', 'follows', 'elsewhere', 'inactive'].map((name) => stack.createUser({ fullName: name })),
  );
  const everyone = [alice, bySubscription, byDefault, following, elsewhere, inactive];
  const stream = await stack.createStream({
    name: 'notifiable',
    creatorId: alice.id,
    subscribers: everyone.map((user) => user.id),
  });
  await stack.db.subscription.updateMany({
    where: { stream_id: stream.id, user_profile_id: bySubscription.id },
    data: { push_notifications: true },
  });
  await stack.db.userProfile.update({
    where: { id: byDefault.id },
    data: { settings: { enable_stream_email_notifications: true } },
  });
  const follow = (user: TestUser, topic: string) =>
    stack.db.userTopic.create({
      data: {
        user_profile_id: user.id,
        stream_id: stream.id,
        topic_name: topic,
        visibility_policy: VisibilityPolicy.FOLLOWED,
      },
    });
  await follow(following, 'Lunch');
  await follow(elsewhere, 'dinner');
  await stack.db.subscription.updateMany({
    where: { stream_id: stream.id, user_profile_id: inactive.id },
    data: { push_notifications: true },
  });
  await stack.db.userProfile.update({ where: { id: inactive.id }, data: { is_active: false } });

  const context = await loadSendContext(stack.db, {
    senderId: alice.id,
    realmId: stack.realm.id,
    stream: stream.id,
    topic: 'LUNCH',
    alertWordUsers: [],
  });
  expect(context.notifiableSubscriberIds).toEqual(new Set([bySubscription.id, byDefault.id, following.id]));
});
