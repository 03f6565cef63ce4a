// Everything a send reads before it writes, in one statement: the sender and their realm, the
// channel, whether the sender (and a bot's owner) may post there, the channel's active
// subscribers (and which of them could be notified without a mention), who muted the sender,
// the recipients' alert words, and the new message's id.
//
// Sending is the hot path. Read as separate queries these were four or five waves of round trips
// (the realm after the sender, the rights and subscribers after the channel, the alert words
// after the subscribers), each query a millisecond of Prisma's client engine besides; this is
// one named statement on the pool under Prisma (see sqlPool in packages/db), parsed once per
// connection. The checks on what it read stay in the callers (permissions.ts, recipients.ts),
// in Zulip's order.

import { queryRows, type Db, type Realm, type Stream, type UserProfile } from '@teamchat/db';
import { activeSubscriptionSql, channelNotifiableSql, checkStreamName, requireActiveAccount } from '@teamchat/domain';
import type { PostingRights } from './permissions';
import { streamDoesNotExist, type StreamIndicator } from './recipients';

export interface SendContext {
  sender: UserProfile;
  realm: Realm;
  /** Null for a direct message. */
  stream: Stream | null;
  /** The sender's rights in the channel, and (for a bot) its owner's. */
  rights: { own: PostingRights; owner: PostingRights | null };
  /** Active subscribers of the channel, in id order (none for a direct message). */
  subscriberIds: number[];
  /** Those of them who could be notified of the message without a mention (channelNotifiableSql). */
  notifiableSubscriberIds: Set<number>;
  /** Users who muted the sender. */
  mutedSenderFor: Set<number>;
  /** Alert words of the subscribers and of `alertWordUsers`. */
  alertWords: { user_profile_id: number; word: string }[];
  /** The new message's id (taken whether or not the send goes on, as a sequence does). */
  id: number;
}

interface Row {
  sender: Record<string, unknown> | null;
  realm: Record<string, unknown> | null;
  stream: Record<string, unknown> | null;
  can_send: boolean;
  subscribed: boolean;
  owner_can_send: boolean | null;
  owner_subscribed: boolean | null;
  subscriber_ids: number[] | null;
  notifiable_ids: number[] | null;
  muter_ids: number[] | null;
  alert_words: { user_profile_id: number; word: string }[] | null;
  id: number;
}

// $1 sender, $2 realm, $3 the channel (id or name; null for a direct message), $4 more users whose
// alert words count (a direct message's recipients), $5 the topic. The rights are Zulip's
// can_send_message_group membership (recursively, active users) and an active subscription,
// as in permissions.ts. The subscribers are read from subscription alone
// (activeSubscriptionSql): probing user_profile for each was most of this statement's time.
const statement = (streamMatch: string) => `
  WITH RECURSIVE target AS (
    SELECT s.* FROM stream s WHERE s.realm_id = $2 AND ${streamMatch} LIMIT 1
  ), groups(id) AS (
    SELECT gs.group_id FROM group_setting gs
    WHERE gs.owner_kind = 'stream' AND gs.owner_id = (SELECT id FROM target) AND gs.name = 'can_send_message_group'
    UNION SELECT ggm.subgroup_id FROM group_group_membership ggm JOIN groups ON ggm.supergroup_id = groups.id
  ), actor AS (
    SELECT u, r, CASE WHEN u.is_bot THEN u.bot_owner_id END AS owner_id
    FROM user_profile u JOIN realm r ON r.id = u.realm_id WHERE u.id = $1
  ), subscribers AS (
    SELECT s.user_profile_id AS id,
      ${channelNotifiableSql('s.user_profile_id', '(SELECT id FROM target)', '$5::text')} AS notifiable
    FROM subscription s
    WHERE s.stream_id = (SELECT id FROM target) AND ${activeSubscriptionSql('s')}
  )
  SELECT
    (SELECT to_jsonb(u) FROM actor) AS sender,
    (SELECT to_jsonb(r) FROM actor) AS realm,
    (SELECT to_jsonb(t) FROM target t) AS stream,
    EXISTS (
      SELECT 1 FROM user_group_membership m JOIN groups ON m.user_group_id = groups.id
      JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active WHERE m.user_profile_id = $1
    ) AS can_send,
    EXISTS (
      SELECT 1 FROM subscription s WHERE s.user_profile_id = $1 AND s.stream_id = (SELECT id FROM target) AND s.active
    ) AS subscribed,
    (SELECT EXISTS (
      SELECT 1 FROM user_group_membership m JOIN groups ON m.user_group_id = groups.id
      JOIN user_profile u ON u.id = m.user_profile_id AND u.is_active WHERE m.user_profile_id = actor.owner_id
    ) FROM actor WHERE actor.owner_id IS NOT NULL) AS owner_can_send,
    (SELECT EXISTS (
      SELECT 1 FROM subscription s
      WHERE s.user_profile_id = actor.owner_id AND s.stream_id = (SELECT id FROM target) AND s.active
    ) FROM actor WHERE actor.owner_id IS NOT NULL) AS owner_subscribed,
    -- JSON, not arrays: pg parses a 1,000-id array text in ~300 µs, JSON.parse the same in ~20.
    (SELECT json_agg(id ORDER BY id) FROM subscribers) AS subscriber_ids,
    (SELECT json_agg(id) FROM subscribers WHERE notifiable) AS notifiable_ids,
    (SELECT json_agg(user_profile_id) FROM muted_user WHERE muted_user_id = $1) AS muter_ids,
    (SELECT jsonb_agg(jsonb_build_object('user_profile_id', a.user_profile_id, 'word', a.word))
     FROM alert_word a
     WHERE a.realm_id = $2 AND (a.user_profile_id IN (SELECT id FROM subscribers) OR a.user_profile_id = ANY($4::int[]))
    ) AS alert_words,
    nextval(pg_get_serial_sequence('message', 'id'))::int AS id`;

const BY_ID = statement('s.id = $3::int');
// Zulip's name__iexact.
const BY_NAME = statement('upper(s.name) = upper($3::text)');

/**
 * A row of user_profile, realm or stream as to_jsonb gives it, typed as Prisma reads it: the
 * schema's timestamptz columns as Dates and its bigint columns as BigInts (every other column of
 * these tables is an integer, text, boolean or jsonb, which JSON carries as Prisma gives them).
 */
function revive<T>(row: Record<string, unknown>, dates: string[], bigints: string[] = []): T {
  for (const column of dates) if (typeof row[column] === 'string') row[column] = new Date(row[column] as string);
  for (const column of bigints)
    if (typeof row[column] === 'number' || typeof row[column] === 'string') row[column] = BigInt(row[column] as string);
  return row as T;
}

/**
 * Reads a send's context. Errors in Zulip's order: the sender's account first, then a channel
 * that does not exist (STREAM_DOES_NOT_EXIST).
 */
export async function loadSendContext(
  db: Db,
  input: {
    senderId: number;
    realmId: number;
    stream: StreamIndicator | null;
    /** A channel message's topic ('' for a direct message). */
    topic: string;
    alertWordUsers: number[];
  },
): Promise<SendContext> {
  let name: string | null = null;
  let badName: unknown = null;
  if (typeof input.stream === 'string') {
    name = input.stream.trim();
    try {
      checkStreamName(name);
    } catch (error) {
      // Reported after the sender's account, as before the reads were one statement.
      badName = error;
    }
  }
  const [row] = await queryRows<Row & Record<string, unknown>>(
    db,
    name === null ? 'send-context-by-id' : 'send-context-by-name',
    name === null ? BY_ID : BY_NAME,
    // A refused name is not sent: one PostgreSQL cannot take (a NUL) would fail the whole read.
    [input.senderId, input.realmId, badName !== null ? '' : (name ?? input.stream), input.alertWordUsers, input.topic],
  );
  const sender = row.sender && revive<UserProfile>(row.sender, ['date_joined', 'last_active_at']);
  requireActiveAccount(sender);
  if (badName !== null) throw badName;
  const realm = revive<Realm>(row.realm!, ['date_created'], ['upload_quota_bytes']);
  let stream: Stream | null = null;
  if (input.stream !== null) {
    if (!row.stream) throw streamDoesNotExist(name ?? input.stream);
    stream = revive<Stream>(row.stream, ['date_created']);
  }
  return {
    sender,
    realm,
    stream,
    rights: {
      own: { canSend: row.can_send, subscribed: row.subscribed },
      owner: row.owner_can_send === null ? null : { canSend: row.owner_can_send, subscribed: row.owner_subscribed! },
    },
    subscriberIds: row.subscriber_ids ?? [],
    notifiableSubscriberIds: new Set(row.notifiable_ids ?? []),
    mutedSenderFor: new Set(row.muter_ids ?? []),
    alertWords: row.alert_words ?? [],
    id: row.id,
  };
}
