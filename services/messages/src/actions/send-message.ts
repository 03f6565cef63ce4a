// Sending a message (Zulip's check_message + do_send_messages): address, permissions, topic
// rules, rendering, then one atomic write of the message, one user_message row per
// recipient, the `message` event (and, for a channel's first message, its first_message_id
// update) in the event outbox.
//
// Sending is the hot path, so its reads run in parallel and its write is a single statement
// (a one-statement transaction, with the outbox rows in the same statement: bus.outboxWrite's
// INSERTs); the events are published right after it, and the outbox relay publishes them if
// that fails. Messages that link uploads also claim them, in one transaction with the same
// statement.

import crypto from 'node:crypto';
import { JsonableError, type Requester } from '@teamchat/core';
import { Prisma, queryRows, transaction, type Stream, type TxClient, type UserProfile } from '@teamchat/db';
import {
  BotType,
  claimAttachments,
  dmKey,
  flagsList,
  inaccessibleUserIds,
  linkedUploadPathIds,
  imagesThumbnailedMeanwhile,
  loadMarkdownData,
  MessageFlag,
  mayBeNotified,
  metadataAccessUserIds,
  renderMessageMarkdown,
  SERVER_LIMITS,
  topicLinks,
  truncateText,
  wideMessageDict,
  type DisplayRecipientUser,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { usersAlertedBy, usersAlertedByWords } from '../lib/alert-words';
import { checkMentions } from '../lib/mentions';
import { checkCanSendDirectMessage, checkPostingRights } from '../lib/permissions';
import {
  checkTopicInput,
  checkTopicsPolicy,
  usersForRecipients,
  type PrivateRecipients,
  type StreamIndicator,
} from '../lib/recipients';
import { loadSendContext } from '../lib/send-context';
import { pythonJsonDumps } from '../lib/python-json';
import { checkWidgetContent, widgetOfContent } from '../lib/widgets';

export type SendMessageInput =
  | {
      type: 'stream';
      to: StreamIndicator | undefined;
      topic: string | undefined;
      content: string;
      options: SendOptions;
    }
  | { type: 'private'; to: PrivateRecipients; content: string; options: SendOptions };

export interface SendOptions {
  sendingClient: string;
  readBySender: boolean;
  localId?: string;
  senderQueueId?: string;
  /** A bot's widget (Zulip's widget_content), as sent: JSON text, checked with the message. */
  widgetContent?: string;
}

/**
 * An int[] parameter as PostgreSQL's array text: pg would quote and escape each of a thousand
 * recipients' ids and flags one by one.
 */
const intArray = (values: number[]) => `{${values.join(',')}}`;

/** Zulip's normalize_body. */
export function normalizeBody(body: string): string {
  const trimmed = body.trimEnd().replace(/^\n+/, '');
  if (trimmed.length === 0) throw new JsonableError('Message must not be empty');
  if (trimmed.includes('\u0000')) throw new JsonableError('Message must not contain null bytes');
  return truncateText(trimmed, SERVER_LIMITS.max_message_length, '\n[message truncated]');
}

type Target =
  | { kind: 'stream'; stream: Stream; topic: string; recipientIds: number[] }
  | { kind: 'private'; participants: UserProfile[]; key: string };

export async function doSendMessage(
  deps: MessagesDeps,
  requester: Requester,
  input: SendMessageInput,
): Promise<{ id: number }> {
  const db = deps.db;
  const viewer = { id: requester.userId, realm_id: requester.realmId, role: requester.role };

  // Checks on the request itself first, in Zulip's order (Addressee, then normalize_body).
  let topic = '';
  let recipientUsers: UserProfile[] = [];
  if (input.type === 'stream') {
    if (input.to === undefined) throw new JsonableError('Missing channel');
    if (input.topic === undefined) throw new JsonableError('Missing topic');
    topic = truncateText(checkTopicInput(input.topic), SERVER_LIMITS.max_topic_length, '...');
  } else {
    if (input.to.length === 0) throw new JsonableError('Message must have recipients');
    recipientUsers = await usersForRecipients(db, requester.realmId, input.to);
  }
  const content = normalizeBody(input.content);
  // A /poll or /todo message (or a bot's widget_content) gets its widget's first submessage in
  // the same statement (Zulip's do_widget_post_save_actions), and the message event carries it:
  // its id is taken first.
  const contentWidget = widgetOfContent(content);
  const { widgetContent } = input.options;
  const submessageId = contentWidget || widgetContent !== undefined ? nextSubmessageId(db) : null;
  submessageId?.catch(() => {});

  // Two reads at once: what the content mentions (loadMarkdownData), and in one statement the
  // sender, the channel, the rights, the subscribers, the mutes, the alert words and the new id.
  const markdownLoaded = loadMarkdownData(db, viewer, content);
  markdownLoaded.catch(() => {});
  const context = await loadSendContext(db, {
    senderId: requester.userId,
    realmId: requester.realmId,
    stream: input.type === 'stream' ? input.to! : null,
    topic,
    alertWordUsers: input.type === 'stream' ? [] : [...new Set([requester.userId, ...recipientUsers.map((u) => u.id)])],
  });
  const { sender, realm } = context;

  let target: Target;
  if (input.type === 'stream') {
    const stream = context.stream!;
    checkPostingRights(sender, stream, context.rights.own, context.rights.owner);
    checkTopicsPolicy(realm, stream, topic);
    target = { kind: 'stream', stream, topic, recipientIds: context.subscriberIds };
  } else {
    for (const user of recipientUsers) {
      if (!user.is_active) throw new JsonableError(`'${user.email}' is no longer using Zulip.`);
    }
    if ((await inaccessibleUserIds(db, viewer, recipientUsers)).size > 0) {
      throw new JsonableError('You do not have permission to access some of the recipients.');
    }
    const participantsById = new Map([...recipientUsers, sender].map((user) => [user.id, user]));
    const key = dmKey(participantsById.keys());
    await checkCanSendDirectMessage(db, sender, recipientUsers, key);
    target = { kind: 'private', participants: [...participantsById.values()], key };
  }

  // Checked once the message may be sent, as Zulip's check_message does; it replaces the content's.
  const widget = widgetContent !== undefined ? checkWidgetContent(widgetContent) : contentWidget;

  // Rendering and the permissions that depend on what was actually mentioned.
  const markdownData = await markdownLoaded;
  const rendering = renderMessageMarkdown(content, markdownData);
  const stream = target.kind === 'stream' ? target : null;
  const { mentioned: mentionedIds, topicParticipants } = await checkMentions(
    db,
    sender,
    stream && {
      streamId: stream.stream.id,
      topic: stream.topic,
      subscriberCount: async () => stream.recipientIds.length,
    },
    rendering,
  );

  // Who gets a user_message row, with which flags (Zulip's create_user_messages).
  const recipientIds = target.kind === 'stream' ? [...target.recipientIds] : target.participants.map((user) => user.id);
  const alerted = usersAlertedByWords(context.alertWords, content);
  if (target.kind === 'stream' && mentionedIds.size > 0) {
    // Mentioned generic bots receive the message even when not subscribed.
    const bots = await db.userProfile.findMany({
      where: {
        id: { in: [...mentionedIds].filter((id) => !recipientIds.includes(id)) },
        is_bot: true,
        bot_type: 1,
        is_active: true,
      },
      select: { id: true },
    });
    const botIds = bots.map((bot) => bot.id);
    recipientIds.push(...botIds);
    if (botIds.length > 0) for (const id of await usersAlertedBy(db, realm.id, botIds, content)) alerted.add(id);
  }
  // Recipients who muted the sender get it already read (Zulip's muted_sender_user_ids).
  const mutedSenderFor = context.mutedSenderFor;
  let baseFlags = 0;
  if (rendering.streamWildcard) baseFlags |= MessageFlag.stream_wildcard_mentioned;
  if (target.kind === 'private') baseFlags |= MessageFlag.is_private;
  const flagsOf = (userId: number) => {
    let flags = baseFlags;
    if (userId === sender.id && input.options.readBySender) flags |= MessageFlag.read;
    if (mutedSenderFor.has(userId)) flags |= MessageFlag.read;
    if (mentionedIds.has(userId)) flags |= MessageFlag.mentioned;
    if (alerted.has(userId)) flags |= MessageFlag.has_alert_word;
    if (rendering.topicWildcard && topicParticipants.has(userId)) flags |= MessageFlag.topic_wildcard_mentioned;
    return flags;
  };
  const flags = recipientIds.map(flagsOf);

  // The row and the event, built before the write so both go in one statement.
  const id = context.id;
  const row = {
    id,
    realm_id: realm.id,
    sender_id: sender.id,
    stream_id: target.kind === 'stream' ? target.stream.id : null,
    topic: target.kind === 'stream' ? target.topic : '',
    dm_key: target.kind === 'private' ? target.key : null,
    content,
    rendered_content: rendering.html,
    date_sent: new Date(),
    last_edit_time: null,
    edit_history: null,
    sending_client: input.options.sendingClient,
  };
  const participants: DisplayRecipientUser[] =
    target.kind === 'private'
      ? target.participants.map((user) => ({
          id: user.id,
          email: user.email,
          full_name: user.full_name,
          is_mirror_dummy: false,
        }))
      : [];
  const submessage = widget && {
    msg_type: 'widget',
    // As Zulip's json.dumps writes it, so the submessage reads as Zulip's does.
    content: pythonJsonDumps(widget),
    message_id: id,
    sender_id: sender.id,
    id: await submessageId!,
  };
  const wide = wideMessageDict(row, {
    sender,
    realmStringId: realm.string_id,
    streamName: target.kind === 'stream' ? target.stream.name : null,
    participants,
    reactions: [],
    submessages: submessage ? [submessage] : [],
    topicLinks: target.kind === 'stream' ? topicLinks(target.topic, markdownData.linkifiers) : [],
  });
  // Local echo: Zulip gives local_id back to the queue that sent the message (queue_id) only;
  // it travels beside the event, and the event tier adds it to that queue's copy.
  const { localId, senderQueueId } = input.options;
  const echo = localId !== undefined && senderQueueId !== undefined ? { queueId: senderQueueId, localId } : undefined;
  // The sender first: with thousands of recipients, they see their message soonest.
  const order = recipientIds
    .map((userId, index) => ({ id: userId, bits: flags[index] }))
    .sort((a, b) => Number(b.id === sender.id) - Number(a.id === sender.id));
  // A recipient whose copy has no flags is its id alone (the event tier gives the copy
  // `flags: []`): a thousand such recipients are ~6 KB of JSON instead of ~24 KB, written to the
  // outbox row and to Redis, and parsed by both.
  const flagNames = new Map<number, string[]>();
  const recipientOf = ({ id: userId, bits }: { id: number; bits: number }) => {
    let names = flagNames.get(bits);
    if (names === undefined) flagNames.set(bits, (names = flagsList(bits)));
    return names.length === 0 ? userId : { id: userId, flags: names };
  };
  const messageOutbox = deps.bus.outboxWrite({
    realmId: realm.id,
    event: { type: 'message', message: wide },
    users: order.map(recipientOf),
    echo,
    // The event tier gives a public channel's messages to realm-wide queues: it need not look the channel up.
    ...(target.kind === 'stream' && { inviteOnly: target.stream.invite_only }),
  });
  const firstInChannel = target.kind === 'stream' && target.stream.first_message_id === null ? target.stream : null;
  // Written only if this statement is the one that sets first_message_id.
  const streamOutbox =
    firstInChannel &&
    deps.bus.outboxWrite({
      realmId: realm.id,
      event: {
        type: 'stream',
        op: 'update',
        property: 'first_message_id',
        value: id,
        stream_id: firstInChannel.id,
        name: firstInChannel.name,
      },
      users: await metadataAccessUserIds(db, firstInChannel),
      from: Prisma.sql`first_message`,
    });

  const statement = Prisma.sql`
      WITH m AS (
        INSERT INTO message (id, realm_id, sender_id, stream_id, topic, dm_key, content, rendered_content, rendered_content_version,
                             date_sent, has_link, has_image, sending_client)
        VALUES (${id}::int, ${row.realm_id}::int, ${row.sender_id}::int, ${row.stream_id}::int, ${row.topic}, ${row.dm_key}, ${content}, ${rendering.html}, 1,
                ${row.date_sent}::timestamptz, ${rendering.hasLink}::boolean, ${rendering.hasImage}::boolean, ${row.sending_client})
      ), um AS (
        INSERT INTO user_message (user_profile_id, message_id, flags)
        SELECT recipient, ${id}::int, flags FROM unnest(${intArray(recipientIds)}::int[], ${intArray(flags)}::int[]) AS t(recipient, flags)
      )${
        submessage
          ? Prisma.sql`, widget AS (
        INSERT INTO submessage (id, message_id, sender_id, msg_type, content)
        VALUES (${submessage.id}::int, ${id}::int, ${submessage.sender_id}::int, ${submessage.msg_type}, ${submessage.content})
      )`
          : Prisma.empty
      }, first_message AS (
        UPDATE stream SET first_message_id = ${id}::int
        WHERE ${firstInChannel !== null}::boolean AND id = ${firstInChannel?.id ?? 0}::int AND first_message_id IS NULL
        RETURNING id
      ), message_event AS (${messageOutbox.sql}
      )${streamOutbox ? Prisma.sql`, stream_event AS (${streamOutbox.sql})` : Prisma.empty}
      SELECT 'message' AS kind, id, xid FROM message_event
      ${streamOutbox ? Prisma.sql`UNION ALL SELECT 'stream', id, xid FROM stream_event` : Prisma.empty}`;
  // A named statement on the pool (see sqlPool in packages/db): Prisma's client engine would
  // spend milliseconds on its thousand-element arrays and its event. Named after its text,
  // which differs only with the first-message event.
  const statementName = `send-message-${crypto.createHash('sha1').update(statement.text).digest('hex').slice(0, 16)}`;
  const write = (client: Pick<TxClient, '$queryRawUnsafe'>) =>
    queryRows<{ kind: string; id: string; xid: string }>(client, statementName, statement.text, statement.values);

  const outboxRows =
    linkedUploadPathIds(content).length === 0
      ? await write(db)
      : await transaction(db, async (tx) => {
          const written = await write(tx.db);
          if (await claimAttachments(tx.db, { id, realm_id: realm.id, sender_id: sender.id, content })) {
            await tx.db.$executeRaw(Prisma.sql`UPDATE message SET has_attachment = TRUE WHERE id = ${id}`);
          }
          // Placeholders whose thumbnails appeared while this rendered: the worker shows them.
          const thumbnailed = await imagesThumbnailedMeanwhile(tx.db, realm.id, rendering.thumbnailSpinners ?? []);
          tx.onCommit(async () => {
            for (const imageAttachmentId of thumbnailed)
              await deps.jobs.enqueueThumbnail({ realmId: realm.id, imageAttachmentId });
          });
          return written;
        });

  // Committed: publish now, in order on the one Redis connection, without holding the answer
  // back for it (the outbox relay covers a failure here).
  for (const outboxRow of outboxRows.sort((a, b) => Number(a.kind !== 'message') - Number(b.kind !== 'message'))) {
    void (outboxRow.kind === 'message' ? messageOutbox : streamOutbox!).publish(outboxRow);
  }
  // Push and email notifications: the worker decides who gets one (packages/notifications), and
  // is asked only when someone could be notified (Zulip's get_recipient_info sets): a message to a
  // channel of thousands that mentions nobody mostly needs no job.
  const notifiableUnmentioned = (userId: number) =>
    target.kind === 'private' || context.notifiableSubscriberIds.has(userId);
  if (
    recipientIds.some(
      (userId, index) => userId !== sender.id && mayBeNotified(flags[index], notifiableUnmentioned(userId)),
    )
  ) {
    deps.jobs
      .enqueueMessageNotifications({ realmId: realm.id, messageId: id })
      .catch((error) => deps.logger.warn({ err: error, message_id: id }, 'enqueueing message notifications failed'));
  }
  if (!sender.is_bot) {
    const botParticipants = target.kind === 'private' ? target.participants : [];
    triggerOutgoingWebhooks(deps, {
      realmId: realm.id,
      messageId: id,
      inChannel: target.kind === 'stream',
      mentionedIds,
      botParticipants,
    }).catch((error) => deps.logger.warn({ err: error, message_id: id }, 'enqueueing outgoing webhooks failed'));
  }
  return { id };
}

/**
 * Asks the worker to call the outgoing webhook bots a human's message is for (Zulip's
 * get_service_bot_events): those it mentions in a channel, those it is a direct message to.
 * A bot's messages trigger none, so a bot's reply cannot call another bot in a loop.
 */
async function triggerOutgoingWebhooks(
  deps: MessagesDeps,
  message: {
    realmId: number;
    messageId: number;
    inChannel: boolean;
    mentionedIds: Set<number>;
    botParticipants: UserProfile[];
  },
): Promise<void> {
  const isOutgoingWebhookBot = (user: Pick<UserProfile, 'is_bot' | 'bot_type' | 'is_active'>) =>
    user.is_bot && user.bot_type === BotType.OUTGOING_WEBHOOK && user.is_active;
  let botIds: number[];
  let trigger: 'mention' | 'direct_message';
  if (message.inChannel) {
    if (message.mentionedIds.size === 0) return;
    trigger = 'mention';
    const mentioned = await deps.db.userProfile.findMany({
      where: {
        id: { in: [...message.mentionedIds] },
        is_bot: true,
        bot_type: BotType.OUTGOING_WEBHOOK,
        is_active: true,
      },
      select: { id: true },
    });
    botIds = mentioned.map((bot) => bot.id);
  } else {
    trigger = 'direct_message';
    botIds = message.botParticipants.filter(isOutgoingWebhookBot).map((bot) => bot.id);
  }
  for (const botId of botIds) {
    await deps.jobs.enqueueOutgoingWebhook({ realmId: message.realmId, messageId: message.messageId, botId, trigger });
  }
}

/** A new submessage id, taken before the send's one write statement (as the message's is). */
async function nextSubmessageId(db: Pick<TxClient, '$queryRaw'>): Promise<number> {
  const [row] = await db.$queryRaw<{ id: number }[]>(
    Prisma.sql`SELECT nextval(pg_get_serial_sequence('submessage', 'id'))::int AS id`,
  );
  return row.id;
}

/** Senders of and reactors to the topic (Zulip's participants_for_topic). */
