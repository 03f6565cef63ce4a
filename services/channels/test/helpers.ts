// Fixtures for the channels tests (events: captureEvents of @teamchat/testing).
import type { Stack } from '@teamchat/stack';
import { systemGroupId as realmSystemGroupId, type SystemGroupName } from '@teamchat/domain';

export const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

/**
 * Channel messages written straight to the database (the messages service owns sending):
 * `count` messages in `topic`, each received by `recipients` (user_message rows), recorded as a
 * write of the realm. Returns their ids, oldest first.
 */
export async function insertMessages(
  stack: Stack,
  input: {
    streamId: number;
    senderId: number;
    topic: string;
    count: number;
    recipients: number[];
    realmId?: number;
    content?: string;
  },
): Promise<number[]> {
  const realmId = input.realmId ?? stack.realm.id;
  const rows = await stack.db.$queryRaw<{ id: number }[]>`
    INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content)
    SELECT ${realmId}, ${input.senderId}, ${input.streamId}, ${input.topic}, ${input.content ?? 'hello'} || ' ' || n, '<p>hello</p>'
    FROM generate_series(1, ${input.count}) AS n
    RETURNING id`;
  const ids = rows.map((row) => row.id).sort((a, b) => a - b);
  if (input.recipients.length) {
    await stack.db.$executeRaw`
      INSERT INTO user_message (user_profile_id, message_id, flags)
      SELECT u, m, 0 FROM unnest(${input.recipients}::int[]) AS u CROSS JOIN unnest(${ids}::int[]) AS m`;
  }
  // The channel's first message, as the messages service keeps it.
  await stack.db.$executeRaw`
    UPDATE stream SET first_message_id = (SELECT min(id) FROM message WHERE stream_id = ${input.streamId}) WHERE id = ${input.streamId}`;
  // With a read replica, the API's reads wait for these rows (or read the primary).
  await stack.fixtureWritten(realmId);
  return ids;
}

/** Points a realm permission at a system group (the users service owns realm settings; a fixture here). */
export const setRealmSetting = (stack: Stack, name: string, systemGroup: SystemGroupName) =>
  stack.setRealmGroupSetting(name, systemGroup);

export const systemGroupId = (stack: Stack, name: SystemGroupName) =>
  realmSystemGroupId(stack.db, stack.realm.id, name);

/** The group id holding a channel setting. */
export async function streamSettingGroupId(stack: Stack, streamId: number, name: string): Promise<number> {
  const row = await stack.db.groupSetting.findUniqueOrThrow({
    where: { owner_kind_owner_id_name: { owner_kind: 'stream', owner_id: streamId, name } },
  });
  return row.group_id;
}

let channelCounter = 0;
export const uniqueName = (prefix: string) => `${prefix}-${++channelCounter}`;
