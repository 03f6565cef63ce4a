// Editing a message (Zulip's check_update_message and do_update_message): its content
// (re-rendered, mention flags recomputed, uploads re-linked), its topic (one message, later
// ones, or the whole topic; resolving and unresolving), or its channel. One transaction with
// the message row locked; the update_message event goes out after commit.
//
// A move is told of by the notification bot in the same transaction, as Zulip does: "marked this
// topic as resolved/unresolved" (an undo within the grace period deletes the last notice instead),
// and the breadcrumbs in the old and new topics (send_notification_to_old_thread / _new_thread).
//
// Not done (as Zulip does): moving users' topic visibility policies along with a moved topic
// (user_topic belongs to the channels service).

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError } from '@teamchat/core';
import { Prisma, transaction, type Message, type Stream, type Tx, type TxClient, type UserProfile } from '@teamchat/db';
import {
  accessStreamById,
  activeSubscriberIds,
  attachmentDicts,
  attachmentsOrphanedBy,
  claimAttachments,
  EMPTY_TOPIC_DISPLAY_NAME,
  flagsList,
  getSystemBot,
  hasGroupPermission,
  hasRealmPermission,
  isModerator,
  isResolveTopicNotice,
  linkedUploadPathIds,
  loadActor,
  loadLinkifiers,
  loadMarkdownData,
  MessageFlag,
  messageActionAudience,
  nearStreamMessageUrl,
  normalizeTopicInput,
  realmUrl,
  renderMessageMarkdown,
  RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS,
  RESOLVED_TOPIC_PREFIX,
  resolveChange,
  Role,
  SERVER_LIMITS,
  silentMentionSyntax,
  sortedUnion,
  streamAccess,
  topicLinks,
  truncateText,
  viewerOf,
  writeInternalMessage,
  type AttachmentDict,
  type RenderingResult,
} from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { usersAlertedBy } from '../lib/alert-words';
import { realmMessageSettings } from '../lib/context';
import { refreshFirstMessageIds } from './first-message-ids';
import { accessMessageForUpdate } from '../lib/messages';
import { checkMentions } from '../lib/mentions';
import { checkCanSendToStream } from '../lib/permissions';
import { checkTopicPrintable, checkTopicsPolicy } from '../lib/recipients';
import { isWidgetMessage } from '../lib/widgets';
import { normalizeBody } from './send-message';

/** Zulip's edit_limit_buffer: seconds of grace past each time limit. */
const EDIT_LIMIT_BUFFER_SECONDS = 20;

export type PropagateMode = 'change_one' | 'change_later' | 'change_all';

export interface EditMessageInput {
  topic?: string;
  propagateMode: PropagateMode;
  content?: string;
  streamId?: number;
  /** Zulip's send_notification_to_old_thread (default false) and _new_thread (default true). */
  sendNotificationToOldThread?: boolean;
  sendNotificationToNewThread?: boolean;
}

type Settings = ReturnType<typeof realmMessageSettings>;
type Db = TxClient;

/** Zulip's validate_user_can_edit_message: content edits are the sender's, within the realm's limit. */
export function checkCanEditContent(
  settings: Settings,
  user: Pick<UserProfile, 'id'>,
  message: Pick<Message, 'sender_id' | 'date_sent'>,
  bufferSeconds: number,
): void {
  if (!settings.allow_message_editing) throw new JsonableError('Your organization has turned off message editing');
  if (message.sender_id !== user.id) throw new JsonableError("You don't have permission to edit this message");
  const limit = settings.message_content_edit_limit_seconds;
  if (limit !== null && Date.now() - message.date_sent.getTime() > (limit + bufferSeconds) * 1000) {
    throw new JsonableError('The time limit for editing this message has passed');
  }
}

/**
 * A move permission (Zulip's can_edit_topic, can_resolve_topics, can_move_messages_out_of_channel):
 * the realm's setting, the channel's setting, or administering the channel.
 */
async function canMoveInChannel(
  db: Db,
  user: UserProfile,
  stream: Stream,
  realmSetting: string,
  channelSetting: string,
): Promise<boolean> {
  if (await hasRealmPermission(db, user, realmSetting)) return true;
  if (await hasGroupPermission(db, user.id, 'stream', stream.id, channelSetting)) return true;
  return hasGroupPermission(db, user.id, 'stream', stream.id, 'can_administer_channel_group');
}

/** Whether the user can read the channel's whole history (Zulip's can_access_stream_history). */
async function canAccessStreamHistory(db: Db, user: UserProfile, stream: Stream): Promise<boolean> {
  if (!stream.history_public_to_subscribers) return false;
  return (await streamAccess(db, viewerOf(user), stream)).content;
}

/**
 * The messages of a topic the user may move (Zulip's messages_for_topic filtered by
 * bulk_access_stream_messages_query), oldest first: with protected history, only those they received.
 */
async function movableTopicMessages(db: Db, user: UserProfile, stream: Stream, topic: string): Promise<TopicMessage[]> {
  const wholeHistory = await canAccessStreamHistory(db, user, stream);
  return db.$queryRaw<TopicMessage[]>`
    SELECT m.id, m.date_sent FROM message m
    WHERE m.stream_id = ${stream.id} AND lower(m.topic) = lower(${topic})
      AND (${wholeHistory} OR EXISTS (SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_profile_id = ${user.id}))
    ORDER BY m.id`;
}

type TopicMessage = { id: number; date_sent: Date };

/**
 * Zulip's check_time_limit_for_change_all_propagate_mode. `topicMessages` gives the topic's
 * movable messages (movableTopicMessages), read only when a limit applies.
 */
async function checkChangeAllTimeLimit(
  settings: Settings,
  topicMessages: () => Promise<TopicMessage[]>,
  topicEdited: boolean,
  streamEdited: boolean,
) {
  const deadlines: number[] = [];
  if (topicEdited && settings.move_messages_within_stream_limit_seconds !== null)
    deadlines.push(settings.move_messages_within_stream_limit_seconds + EDIT_LIMIT_BUFFER_SECONDS);
  if (streamEdited && settings.move_messages_between_streams_limit_seconds !== null)
    deadlines.push(settings.move_messages_between_streams_limit_seconds + EDIT_LIMIT_BUFFER_SECONDS);
  if (deadlines.length === 0) return;
  const oldestAllowed = Date.now() - Math.min(...deadlines) * 1000;
  const messages = await topicMessages();
  const allowed = messages.filter((message) => message.date_sent.getTime() > oldestAllowed);
  if (allowed.length === messages.length) return;
  throw new JsonableError(
    `You only have permission to move the ${allowed.length}/${messages.length} most recent messages in this topic.`,
    {
      code: 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
      data: {
        first_message_id_allowed_to_move: allowed[0]?.id ?? null,
        total_messages_in_topic: messages.length,
        total_messages_allowed_to_move: allowed.length,
      },
    },
  );
}

/**
 * Zulip's check_attachment_reference_change: uploads the new content no longer links are
 * unlinked from the message, new ones are claimed. Returns has_attachment and the acting user's
 * uploads that no message links any more (the response's detached_uploads).
 */
async function relinkAttachments(
  db: Db,
  message: Message,
  content: string,
  actingUserId: number,
): Promise<{ hasAttachment: boolean; detached: AttachmentDict[] }> {
  const kept = new Set(linkedUploadPathIds(content));
  const linked = await db.$queryRaw<{ id: number; path_id: string; owner_id: number }[]>`
    SELECT a.id, a.path_id, a.owner_id FROM attachment_message am JOIN attachment a ON a.id = am.attachment_id WHERE am.message_id = ${message.id}`;
  const dropped = linked.filter((attachment) => !kept.has(attachment.path_id));
  let detachedIds: number[] = [];
  if (dropped.length > 0) {
    const droppedIds = dropped.map((attachment) => attachment.id);
    // Before unlinking: the dropped uploads no other message links, of those the acting user owns.
    const orphaned = new Set(await attachmentsOrphanedBy(db, [message.id]));
    detachedIds = dropped
      .filter((attachment) => attachment.owner_id === actingUserId && orphaned.has(attachment.id))
      .map((attachment) => attachment.id);
    await db.$executeRaw`DELETE FROM attachment_message WHERE message_id = ${message.id} AND attachment_id = ANY(${droppedIds}::int[])`;
  }
  // The uploads still linked are all kept ones, which the sender (the editor, who can read the
  // message) may claim again: the message has uploads exactly when claiming links any.
  const hasAttachment =
    kept.size > 0 &&
    (await claimAttachments(db, { id: message.id, realm_id: message.realm_id, sender_id: message.sender_id, content }));
  return { hasAttachment, detached: detachedIds.length ? await attachmentDicts(db, { ids: detachedIds }) : [] };
}

/** PATCH /messages/{message_id} */
export async function doUpdateMessage(
  deps: MessagesDeps,
  userId: number,
  messageId: number,
  input: EditMessageInput,
): Promise<{ detached_uploads: AttachmentDict[] }> {
  const { user, realm } = await loadActor(deps.db, userId);
  const settings = realmMessageSettings(realm);
  return transaction(deps.db, async (tx) => {
    const db = tx.db;
    const { message, stream } = await accessMessageForUpdate(db, viewerOf(user), messageId);
    const ageMs = Date.now() - message.date_sent.getTime();

    if (input.content !== undefined) checkCanEditContent(settings, user, message, EDIT_LIMIT_BUFFER_SECONDS);
    let topicInput = input.topic === undefined ? undefined : normalizeTopicInput(input.topic.trim());
    if (topicInput === message.topic) topicInput = undefined;

    // The request itself (Zulip's validate_message_edit_payload).
    if (topicInput === undefined && input.content === undefined && input.streamId === undefined)
      throw new JsonableError('Nothing to change');
    if (stream === null) {
      if (input.streamId !== undefined) throw new JsonableError('Direct messages cannot be moved to channels.');
      if (topicInput !== undefined) throw new JsonableError('Direct messages cannot have topics.');
    }
    if (input.propagateMode !== 'change_one' && topicInput === undefined && input.streamId === undefined)
      throw new JsonableError('Invalid propagate_mode without topic edit');
    if (
      topicInput === RESOLVED_TOPIC_PREFIX.trim() ||
      topicInput === `${RESOLVED_TOPIC_PREFIX}${EMPTY_TOPIC_DISPLAY_NAME}`
    ) {
      throw new JsonableError('General chat cannot be marked as resolved');
    }
    if (topicInput !== undefined) checkTopicPrintable(topicInput);
    if (input.streamId !== undefined && input.content !== undefined)
      throw new JsonableError('Cannot change message content while changing channel');
    // A widget's state is its submessages, made for the content it was sent with.
    if (input.content !== undefined && (await isWidgetMessage(db, message.id)))
      throw new JsonableError('Widgets cannot be edited.');

    // What changes (Zulip's build_message_edit_request).
    const content =
      input.content === undefined
        ? undefined
        : input.content.trimEnd() === ''
          ? '(deleted)'
          : normalizeBody(input.content);
    const origTopic = message.topic;
    // The topic's messages the user may move, read once for the time-limit check and the move.
    let movable: Promise<TopicMessage[]> | undefined;
    const topicMessages = () => (movable ??= movableTopicMessages(db, user, stream!, origTopic));
    const topicEdited = topicInput !== undefined;
    const targetTopic =
      topicInput === undefined ? origTopic : truncateText(topicInput, SERVER_LIMITS.max_topic_length, '...');
    const resolving = topicEdited ? resolveChange(origTopic, targetTopic) : null;
    const topicResolved = resolving === 'resolved';
    const topicUnresolved = resolving === 'unresolved';
    let targetStream = stream;
    if (stream !== null && input.streamId !== undefined && input.streamId !== stream.id) {
      // The channel messages move to: in the realm, not archived, and readable ("Invalid channel ID").
      targetStream = (await accessStreamById(db, viewerOf(user), input.streamId, { requireActiveChannel: true }))
        .stream;
    }
    const streamEdited = stream !== null && targetStream !== null && targetStream.id !== stream.id;
    if (stream !== null && input.streamId !== undefined && !streamEdited && !topicEdited && content === undefined)
      throw new JsonableError('Nothing to change');
    if (targetStream !== null)
      checkTopicsPolicy(realm, targetStream, targetTopic, { checkEmptyTopic: topicEdited || streamEdited });

    // Permissions for moving.
    if (stream !== null && topicEdited) {
      if (topicResolved || topicUnresolved) {
        if (!(await canMoveInChannel(db, user, stream, 'can_resolve_topics_group', 'can_resolve_topics_group')))
          throw new JsonableError("You don't have permission to resolve topics in this channel.");
      } else {
        if (
          !(await canMoveInChannel(
            db,
            user,
            stream,
            'can_move_messages_between_topics_group',
            'can_move_messages_within_channel_group',
          ))
        )
          throw new JsonableError("You don't have permission to edit this message");
        const limit = settings.move_messages_within_stream_limit_seconds;
        if (limit !== null && !isModerator(user.role) && ageMs > (limit + EDIT_LIMIT_BUFFER_SECONDS) * 1000) {
          throw new JsonableError("The time limit for editing this message's topic has passed.");
        }
      }
    }

    // The new content's rendering and the mention permissions it needs.
    let rendering: RenderingResult | null = null;
    let mentions: { mentioned: Set<number>; topicParticipants: Set<number> } | null = null;
    if (content !== undefined) {
      rendering = renderMessageMarkdown(content, await loadMarkdownData(db, viewerOf(user), content));
      mentions = await checkMentions(
        db,
        user,
        stream && {
          streamId: stream.id,
          topic: targetTopic,
          subscriberCount: async () => (await activeSubscriberIds(db, [stream.id])).get(stream.id)!.length,
        },
        rendering,
      );
    }

    if (stream !== null && targetStream !== null) {
      if (streamEdited) {
        if (
          !(await canMoveInChannel(
            db,
            user,
            stream,
            'can_move_messages_between_channels_group',
            'can_move_messages_out_of_channel_group',
          ))
        )
          throw new JsonableError("You don't have permission to move this message");
        await checkCanSendToStream(db, user, targetStream);
        const limit = settings.move_messages_between_streams_limit_seconds;
        if (limit !== null && !isModerator(user.role) && ageMs > (limit + EDIT_LIMIT_BUFFER_SECONDS) * 1000) {
          throw new JsonableError("The time limit for editing this message's channel has passed");
        }
      }
      if (
        input.propagateMode === 'change_all' &&
        !isModerator(user.role) &&
        (topicEdited || streamEdited) &&
        !topicResolved &&
        !topicUnresolved
      ) {
        await checkChangeAllTimeLimit(settings, topicMessages, topicEdited, streamEdited);
      }
    }

    // ---- the change (Zulip's do_update_message)
    const now = new Date();
    const timestamp = Math.floor(now.getTime() / 1000);
    // Its message_ids once the change is made (a move may take other messages along).
    const event: Omit<ZulipEventOf<'update_message'>, 'message_ids'> = {
      type: 'update_message',
      user_id: user.id,
      edit_timestamp: timestamp,
      message_id: message.id,
      rendering_only: false,
    };
    const historyEntry: Record<string, unknown> = { user_id: user.id, timestamp };
    const updates: Prisma.MessageUpdateInput = { last_edit_time: now };
    let detached: AttachmentDict[] = [];

    if (content !== undefined && rendering && mentions) {
      historyEntry.prev_content = message.content;
      historyEntry.prev_rendered_content = message.rendered_content ?? '';
      event.orig_content = message.content;
      event.orig_rendered_content = message.rendered_content ?? '';
      event.content = content;
      event.rendered_content = rendering.html;
      event.is_me_message = content.startsWith('/me ') && !content.includes('\n');
      Object.assign(updates, {
        content,
        rendered_content: rendering.html,
        rendered_content_version: 1,
        has_link: rendering.hasLink,
        has_image: rendering.hasImage,
      });
      // Mention flags follow the new content (Zulip's update_user_message_flags).
      const mask =
        MessageFlag.mentioned |
        MessageFlag.stream_wildcard_mentioned |
        MessageFlag.topic_wildcard_mentioned |
        MessageFlag.has_alert_word;
      const holders = await db.$queryRaw<
        { id: number }[]
      >`SELECT user_profile_id AS id FROM user_message WHERE message_id = ${message.id}`;
      const alerted = await usersAlertedBy(
        db,
        message.realm_id,
        holders.map((row) => row.id),
        content,
      );
      // Users the edit mentions for the first time may get a notification (Zulip's
      // maybe_enqueue_notifications_for_message_update); the worker applies the usual rules.
      const anyMention =
        MessageFlag.mentioned | MessageFlag.stream_wildcard_mentioned | MessageFlag.topic_wildcard_mentioned;
      const flagged = await db.$queryRaw<{ id: number; newly_mentioned: boolean }[]>`
        UPDATE user_message um SET flags = (um.flags & ${~mask})
          | CASE WHEN um.user_profile_id = ANY(${[...mentions.mentioned]}::int[]) THEN ${MessageFlag.mentioned} ELSE 0 END
          | CASE WHEN um.user_profile_id = ANY(${[...alerted]}::int[]) THEN ${MessageFlag.has_alert_word} ELSE 0 END
          | ${rendering.streamWildcard ? MessageFlag.stream_wildcard_mentioned : 0}
          | CASE WHEN um.user_profile_id = ANY(${[...mentions.topicParticipants]}::int[]) THEN ${MessageFlag.topic_wildcard_mentioned} ELSE 0 END
        FROM user_message old
        WHERE um.message_id = ${message.id} AND old.id = um.id
        RETURNING um.user_profile_id AS id,
          (old.flags & ${anyMention}) = 0 AND (um.flags & ${anyMention}) <> 0 AS newly_mentioned`;
      const newlyMentioned = flagged.filter((row) => row.newly_mentioned).map((row) => row.id);
      if (newlyMentioned.length > 0) {
        tx.onCommit(() =>
          deps.jobs.enqueueMessageNotifications(
            { realmId: realm.id, messageId: message.id, onlyUserIds: newlyMentioned },
            `edit-${timestamp}`,
          ),
        );
      }
      const attachments = await relinkAttachments(db, message, content, user.id);
      updates.has_attachment = attachments.hasAttachment;
      detached = attachments.detached;
    }

    const moved = topicEdited || streamEdited;
    let changedIds = [message.id];
    if (stream !== null) {
      event.stream_name = stream.name;
      event.stream_id = stream.id;
      if (moved) event.propagate_mode = input.propagateMode;
      if (streamEdited) {
        historyEntry.prev_stream = stream.id;
        historyEntry.stream = targetStream!.id;
        event.orig_subject = origTopic;
        event.new_stream_id = targetStream!.id;
        updates.stream = { connect: { id: targetStream!.id } };
      }
      if (topicEdited) {
        event.orig_subject = origTopic;
        event.subject = targetTopic;
        event.topic_links = topicLinks(targetTopic, await loadLinkifiers(db, realm.id));
        historyEntry.prev_topic = origTopic;
        historyEntry.topic = targetTopic;
        updates.topic = targetTopic;
      }
      if (moved && input.propagateMode !== 'change_one') {
        const others = (await topicMessages()).filter(
          (other) => other.id !== message.id && (input.propagateMode === 'change_all' || other.id > message.id),
        );
        changedIds = [...changedIds, ...others.map((other) => other.id)].sort((a, b) => a - b);
        if (others.length > 0) {
          // The other messages' history records only the move.
          const { prev_content: _c, prev_rendered_content: _r, ...moveEntry } = historyEntry;
          await db.$executeRaw`
            UPDATE message SET topic = ${targetTopic}, stream_id = ${targetStream!.id}, last_edit_time = ${now},
              edit_history = jsonb_build_array(${JSON.stringify(moveEntry)}::jsonb) || COALESCE(edit_history, '[]'::jsonb)
            WHERE id = ANY(${others.map((other) => other.id)}::int[])`;
        }
      }
    }
    const previousHistory = Array.isArray(message.edit_history) ? (message.edit_history as Prisma.JsonArray) : [];
    updates.edit_history = [historyEntry as Prisma.JsonObject, ...previousHistory];
    await db.message.update({ where: { id: message.id }, data: updates });

    // Recipients: everyone with a row for the message, with their flags after the edit; in a
    // channel with shared history, its other subscribers too (as read).
    const rows = await db.userMessage.findMany({
      where: { message_id: message.id },
      select: { user_profile_id: true, flags: true },
    });
    let users: { id: number; flags: string[] }[] = rows.map((row) => ({
      id: row.user_profile_id,
      flags: flagsList(row.flags),
    }));
    let losingAccess = new Set<number>();
    if (streamEdited) {
      const move = await applyStreamMove(deps, tx, stream!, targetStream!, origTopic, changedIds);
      losingAccess = move.losingAccess;
      users = users.filter((entry) => !move.losingRows.has(entry.id));
      await refreshFirstMessageIds(deps, tx, [stream!, targetStream!]);
    }
    if (stream !== null && stream.history_public_to_subscribers) {
      const have = new Set(users.map((entry) => entry.id));
      const subscribers = sortedUnion(
        ...(await activeSubscriberIds(db, [...new Set([stream.id, targetStream!.id])])).values(),
      );
      for (const id of subscribers) {
        if (!have.has(id) && !losingAccess.has(id)) {
          users.push({ id, flags: ['read'] });
          have.add(id);
        }
      }
    }
    await deps.bus.sendEventOnCommit(tx, realm.id, { ...event, message_ids: changedIds }, users);
    if (stream !== null && targetStream !== null && moved) {
      await sendMoveNotifications(deps, tx, {
        user,
        realm,
        stream,
        targetStream,
        origTopic,
        targetTopic,
        messageId: message.id,
        changedIds,
        topicEdited,
        streamEdited,
        contentEdited: content !== undefined,
        resolving,
        propagateMode: input.propagateMode,
        toOldThread: input.sendNotificationToOldThread ?? false,
        toNewThread: input.sendNotificationToNewThread ?? true,
      });
    }
    return { detached_uploads: detached };
  });
}

interface MoveNotice {
  user: UserProfile;
  realm: { id: number; string_id: string; host: string };
  stream: Stream;
  targetStream: Stream;
  origTopic: string;
  targetTopic: string;
  messageId: number;
  changedIds: number[];
  topicEdited: boolean;
  streamEdited: boolean;
  contentEdited: boolean;
  resolving: ReturnType<typeof resolveChange>;
  propagateMode: PropagateMode;
  toOldThread: boolean;
  toNewThread: boolean;
}

/**
 * What the notification bot writes about a move, in the move's transaction (Zulip's
 * maybe_send_resolve_topic_notifications and send_message_moved_breadcrumbs): the resolved or
 * unresolved notice (unread only for the topic's participants), then the breadcrumb in the new
 * topic, then the one in the old topic. Their words depend on whether the user moved every
 * message of the topic they can see, and whether the new topic already had some.
 */
async function sendMoveNotifications(deps: MessagesDeps, tx: Tx, move: MoveNotice): Promise<void> {
  const db = tx.db;
  const { user, realm, stream, targetStream, origTopic, targetTopic, changedIds } = move;
  const bot = await getSystemBot(db);
  const mention = silentMentionSyntax(user);
  const send = async (to: Stream, topic: string, content: string, unreadOnlyFor?: Set<number>) => {
    const written = await writeInternalMessage(db, {
      realm,
      sender: bot,
      to: { stream: to, topic },
      content,
      actingUser: viewerOf(user),
      unreadOnlyFor,
    });
    for (const { event, users } of written.events) await deps.bus.sendEventOnCommit(tx, realm.id, event, users);
    return written.id;
  };

  let resolvedNoticeId: number | null = null;
  if (move.topicEdited && !move.contentEdited && !move.streamEdited && move.resolving !== null) {
    // Undoing a resolve (or an unresolve) soon after deletes the notice instead of adding another.
    const [last] = await db.$queryRaw<{ id: number; sender_id: number; content: string; date_sent: Date }[]>`
      SELECT id, sender_id, content, date_sent FROM message
      WHERE stream_id = ${stream.id} AND lower(topic) = lower(${targetTopic}) ORDER BY id DESC LIMIT 1`;
    if (
      last &&
      isResolveTopicNotice(last, bot.id) &&
      Date.now() - last.date_sent.getTime() <= RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS * 1000
    ) {
      await deleteResolveNotice(deps, tx, stream, targetTopic, last.id);
    } else {
      // Only those who sent or reacted to the moved messages get it unread.
      const participants = await db.$queryRaw<{ id: number }[]>`
        SELECT sender_id AS id FROM message WHERE id = ANY(${changedIds}::int[])
        UNION SELECT user_profile_id FROM reaction WHERE message_id = ANY(${changedIds}::int[])`;
      resolvedNoticeId = await send(
        stream,
        targetTopic,
        `${mention} has marked this topic as ${move.resolving}.`,
        new Set(participants.map((row) => row.id)),
      );
    }
  }

  const count = changedIds.length;
  const movedAll =
    move.propagateMode === 'change_all' || (await movableTopicMessages(db, user, stream, origTopic)).length === 0;
  const oldLocation = `#**${stream.name}>${origTopic}**`;
  const newLocation = `#**${targetStream.name}>${targetTopic}**`;
  if (move.toNewThread && (move.streamEdited || (move.topicEdited && move.resolving === null))) {
    const excluded = new Set([...changedIds, resolvedNoticeId]);
    const preexisting = (await movableTopicMessages(db, user, targetStream, targetTopic)).some(
      (other) => !excluded.has(other.id),
    );
    const messageLink = nearStreamMessageUrl(realmUrl(realm, deps.env.EXTERNAL_SCHEME), {
      id: move.messageId,
      streamId: targetStream.id,
      streamName: targetStream.name,
      topic: targetTopic,
    });
    const content =
      !preexisting && movedAll
        ? `This topic was moved here from ${oldLocation} by ${mention}.`
        : count === 1
          ? `[A message](${messageLink}) was moved here from ${oldLocation} by ${mention}.`
          : `${count} messages were moved here from ${oldLocation} by ${mention}.`;
    await send(targetStream, targetTopic, content);
  }
  if (move.toOldThread) {
    const content = movedAll
      ? `This topic was moved to ${newLocation} by ${mention}.`
      : count === 1
        ? `A message was moved from this topic to ${newLocation} by ${mention}.`
        : `${count} messages were moved from this topic to ${newLocation} by ${mention}.`;
    await send(stream, origTopic, content);
  }
}

/** Deletes a resolved/unresolved notice an undo made moot (Zulip's do_delete_messages of it). */
async function deleteResolveNotice(deps: MessagesDeps, tx: Tx, stream: Stream, topic: string, id: number) {
  const db = tx.db;
  const audience = await messageActionAudience(db, [id], stream);
  await db.message.delete({ where: { id } });
  await deps.bus.sendEventOnCommit(
    tx,
    stream.realm_id,
    { type: 'delete_message', message_ids: [id], message_type: 'stream', stream_id: stream.id, topic },
    audience,
  );
  const current = await db.stream.findUniqueOrThrow({ where: { id: stream.id } });
  if (current.first_message_id === id) await refreshFirstMessageIds(deps, tx, [current], audience);
}

/**
 * The user_message side of moving messages to another channel (Zulip's do_update_message for
 * is_stream_edited): users who cannot read the new channel lose their rows and get a
 * delete_message event; with protected history there, every current subscriber gets a row.
 * Returns the update_message recipients that keep access.
 */
async function applyStreamMove(
  deps: MessagesDeps,
  tx: Tx,
  from: Stream,
  to: Stream,
  origTopic: string,
  messageIds: number[],
): Promise<{ losingRows: Set<number>; losingAccess: Set<number> }> {
  const db = tx.db;
  const toSubscribers = new Set(
    (
      await db.$queryRaw<
        { id: number }[]
      >`SELECT user_profile_id AS id FROM subscription WHERE stream_id = ${to.id} AND active`
    ).map((row) => row.id),
  );
  // Everyone ever subscribed to the old channel (their rows may date from then) and not to the new one.
  const fromAll = await db.$queryRaw<{ id: number; role: number }[]>`
    SELECT DISTINCT s.user_profile_id AS id, u.role FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id WHERE s.stream_id = ${from.id}`;
  const losingRows = fromAll.filter((row) => !toSubscribers.has(row.id));
  // In a public channel only guests lose access; in a private one, everyone not subscribed.
  const losingAccess = to.invite_only ? losingRows : losingRows.filter((row) => row.role === Role.GUEST);
  if (losingRows.length > 0) {
    await db.$executeRaw`DELETE FROM user_message WHERE user_profile_id = ANY(${losingRows.map((row) => row.id)}::int[]) AND message_id = ANY(${messageIds}::int[])`;
  }
  if (!to.history_public_to_subscribers && toSubscribers.size > 0) {
    await db.$executeRaw`
      INSERT INTO user_message (user_profile_id, message_id, flags)
      SELECT u, m, ${MessageFlag.read} FROM unnest(${[...toSubscribers]}::int[]) u CROSS JOIN unnest(${messageIds}::int[]) m
      ON CONFLICT DO NOTHING`;
  }
  if (losingAccess.length > 0) {
    await deps.bus.sendEventOnCommit(
      tx,
      from.realm_id,
      { type: 'delete_message', message_ids: messageIds, message_type: 'stream', stream_id: from.id, topic: origTopic },
      losingAccess.map((row) => row.id),
    );
  }
  return {
    losingRows: new Set(losingRows.map((row) => row.id)),
    losingAccess: new Set(losingAccess.map((row) => row.id)),
  };
}
