// PATCH /streams/{stream_id}: every channel property (Zulip's update_stream_backend), checked
// in full before anything changes, then applied in one transaction with one `stream` update
// event per changed property.
//
// Rules (spec, Update a channel):
// 1. Organisation administrators and members of can_administer_channel_group may edit; changing
//    a private channel's privacy or its content-granting settings also needs content access.
// 2. history_public_to_subscribers=false is refused for public and web-public channels.
// 3. topics_policy needs can_set_topics_policy_group; empty_topic_only needs every message in
//    the empty topic.
// 4. can_add_subscribers_group / can_subscribe_group need content access; the other settings
//    metadata access (which administering implies).
// 6. Administrators act as members of can_administer_channel_group (and can_remove_subscribers_group).
// 7. Channel-level delete permissions need can_set_delete_message_policy_group.
// 8. Archived channels can be edited (including their privacy) and un-archived.
// (Rule 5, adding subscribers, is checked where subscriptions are added: actions/subscribe.ts.)

import { JsonableError, OrganizationAdministratorRequiredError, OrganizationOwnerRequiredError } from '@teamchat/core';
import { transaction, type Stream, type Tx, type UserProfile } from '@teamchat/db';
import {
  activeSubscriberIds,
  checkStreamName,
  grantsContentAccess,
  grantsMetadataAccess,
  groupSettingApiValues,
  isAdministrator,
  isOwner,
  metadataAccessUserIds,
  renderMarkdown,
  SERVER_LIMITS,
  streamApiDicts,
  type GroupSettingValue,
} from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';
import type { EventSettingValue } from '@teamchat/bus';
import {
  sendStreamCreationEvent,
  sendStreamDeletionEvent,
  sendStreamUpdateEvent,
  type StreamUpdateExtra,
} from './channel-events';
import {
  DELETE_PERMISSION_SETTINGS,
  holderGroupFor,
  nobodyGroupId,
  replaceStreamSetting,
  requestedSettingValue,
  type GroupSettingUpdate,
} from '../lib/group-settings';
import { ChannelExistsError, singleLineDescription } from '../lib/names';
import {
  canCreatePrivateChannels,
  canCreatePublicChannels,
  canCreateWebPublicChannels,
  canSetDeleteMessagePolicy,
  canSetTopicsPolicy,
  webPublicChannelsEnabled,
} from '../lib/permissions';
import { accessStreamForUpdate, lockStream, streamByName } from '../lib/streams';
import { setDefaultStream } from './default-streams';

export interface StreamUpdate {
  description?: string;
  newName?: string;
  isPrivate?: boolean;
  isWebPublic?: boolean;
  historyPublicToSubscribers?: boolean;
  isDefaultStream?: boolean;
  /** null: the organisation's setting; -1: forever. */
  messageRetentionDays?: number | null;
  isArchived?: boolean;
  folderId?: number | null;
  topicsPolicy?: string;
  groupSettings: Record<string, GroupSettingUpdate>;
}

export const CONTENT_ACCESS_REQUIRED = 'Channel content access is required.';

export async function doUpdateStream(
  deps: ChannelsDeps,
  user: UserProfile,
  streamId: number,
  update: StreamUpdate,
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const db = tx.db;
    const channel = await accessStreamForUpdate(db, user, streamId);
    // Concurrent updates of one channel apply one after the other.
    await lockStream(db, streamId);
    const stream = await db.stream.findUniqueOrThrow({ where: { id: streamId } });

    // ---- privacy (rules 1, 2)
    const privacyGiven =
      update.isPrivate !== undefined ||
      update.isWebPublic !== undefined ||
      update.historyPublicToSubscribers !== undefined;
    const proposedPrivate = update.isPrivate ?? stream.invite_only;
    const proposedWebPublic = update.isWebPublic ?? stream.is_web_public;
    const proposedDefault = update.isDefaultStream ?? stream.is_default;
    const proposedHistory =
      update.historyPublicToSubscribers ??
      (update.isPrivate !== undefined ? !update.isPrivate : stream.history_public_to_subscribers);
    if (proposedWebPublic && !proposedHistory) throw new JsonableError('Invalid parameters');
    if (proposedWebPublic && proposedPrivate) throw new JsonableError('Invalid parameters');
    if (!proposedPrivate && !proposedHistory) throw new JsonableError('Invalid parameters');
    if (proposedPrivate && proposedDefault) throw new JsonableError('A default channel cannot be private.');
    if (update.isPrivate !== undefined) {
      if (!channel.contentAccess) throw new JsonableError(CONTENT_ACCESS_REQUIRED);
      const allowed = update.isPrivate
        ? await canCreatePrivateChannels(db, user)
        : await canCreatePublicChannels(db, user);
      if (!allowed) throw new JsonableError('Insufficient permission');
    }
    if (update.isWebPublic) {
      if (!(await webPublicChannelsEnabled(db, user.realm_id, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) {
        throw new JsonableError('Web-public channels are not enabled.');
      }
      if (!(await canCreateWebPublicChannels(db, user))) throw new JsonableError('Insufficient permission');
    }

    // ---- organisation-level settings of the channel
    if (update.isDefaultStream !== undefined && !isAdministrator(user.role))
      throw new OrganizationAdministratorRequiredError();
    if (update.messageRetentionDays !== undefined && !isOwner(user.role)) throw new OrganizationOwnerRequiredError();
    const unarchive = update.isArchived === false;
    if (unarchive) {
      if (!stream.is_archived) throw new JsonableError('Channel is not currently deactivated');
      if (stream.invite_only && (await activeSubscriberIds(db, [stream.id])).get(stream.id)!.length === 0) {
        throw new JsonableError('Channel is private and have no subscribers');
      }
    }

    // ---- topics policy (rule 3)
    if (update.topicsPolicy !== undefined) {
      if (!(await canSetTopicsPolicy(db, user))) throw new JsonableError('Insufficient permission');
      if (update.topicsPolicy === 'empty_topic_only' && (await hasNamedTopics(db, stream.id))) {
        const name = SERVER_LIMITS.realm_empty_topic_display_name;
        throw new JsonableError(
          `To enable this configuration, all messages in this channel must be in the "${name}" topic. Consider renaming or deleting other topics.`,
        );
      }
    }

    // ---- name, description, folder
    let newName: string | undefined;
    if (update.newName !== undefined) {
      newName = update.newName.trim();
      if (newName === stream.name) throw new JsonableError('Channel already has that name.');
      // Only the case changes: no clash possible.
      if (newName.toLowerCase() !== stream.name.toLowerCase()) {
        checkStreamName(newName);
        const clash = await streamByName(db, user.realm_id, newName);
        if (clash) throw new ChannelExistsError(clash.name);
      }
    }
    const description = update.description === undefined ? undefined : singleLineDescription(update.description);
    if (update.folderId !== undefined && update.folderId !== null) {
      if (!(await db.channelFolder.findFirst({ where: { id: update.folderId, realm_id: user.realm_id } })))
        throw new JsonableError('Invalid channel folder ID');
    }

    // ---- group settings (rules 4, 6, 7)
    const nobody = await nobodyGroupId(db, user.realm_id);
    const currentValues = await groupSettingApiValues(db, Object.values(channel.settings));
    const settingChanges: { name: string; value: GroupSettingValue; previousGroupId: number | undefined }[] = [];
    for (const [name, requested] of Object.entries(update.groupSettings)) {
      const previousGroupId = channel.settings[name];
      const current = previousGroupId === undefined ? nobody : currentValues.get(previousGroupId)!;
      const value = requestedSettingValue(current, requested, nobody);
      if (value === null) continue;
      // Rule 4: settings that open the channel's content need that access to change.
      if (grantsContentAccess(name) && !channel.contentAccess) throw new JsonableError(CONTENT_ACCESS_REQUIRED);
      if (DELETE_PERMISSION_SETTINGS.has(name) && value !== nobody && !(await canSetDeleteMessagePolicy(db, user))) {
        throw new JsonableError('Insufficient permission');
      }
      settingChanges.push({ name, value, previousGroupId });
    }
    // Validates the new holders (and creates anonymous ones) before any other change.
    const newHolders = new Map<string, number>();
    for (const change of settingChanges)
      newHolders.set(change.name, await holderGroupFor(db, user.realm_id, change.name, change.value));

    // ---- apply, in Zulip's order
    let current: Stream = stream;
    if (privacyGiven) {
      const changed =
        proposedPrivate !== stream.invite_only ||
        proposedWebPublic !== stream.is_web_public ||
        proposedHistory !== stream.history_public_to_subscribers;
      if (changed) {
        current = await applyVisibilityChange(
          deps,
          tx,
          current,
          () =>
            db.stream.update({
              where: { id: stream.id },
              data: {
                invite_only: proposedPrivate,
                is_web_public: proposedWebPublic,
                history_public_to_subscribers: proposedHistory,
              },
            }),
          (s) => ({
            property: 'invite_only',
            value: s.invite_only,
            extra: { history_public_to_subscribers: s.history_public_to_subscribers, is_web_public: s.is_web_public },
          }),
        );
      }
    }
    if (update.isDefaultStream !== undefined) {
      await setDefaultStream(deps, tx, current, update.isDefaultStream);
      current = await db.stream.findUniqueOrThrow({ where: { id: stream.id } });
    }
    if (update.messageRetentionDays !== undefined && update.messageRetentionDays !== current.message_retention_days) {
      current = await db.stream.update({
        where: { id: stream.id },
        data: { message_retention_days: update.messageRetentionDays },
      });
      await sendToMetadataUsers(deps, tx, current, 'message_retention_days', current.message_retention_days);
    }
    if (unarchive) {
      current = await db.stream.update({ where: { id: stream.id }, data: { is_archived: false } });
      const audience = await metadataAccessUserIds(tx.db, current);
      await sendStreamUpdateEvent(deps, tx, current, 'is_archived', false, audience);
      await sendStreamCreationEvent(deps, tx, current, audience);
    }
    if (update.topicsPolicy !== undefined && update.topicsPolicy !== current.topics_policy) {
      current = await db.stream.update({ where: { id: stream.id }, data: { topics_policy: update.topicsPolicy } });
      await sendToMetadataUsers(deps, tx, current, 'topics_policy', current.topics_policy);
    }
    if (description !== undefined && description !== current.description) {
      current = await db.stream.update({
        where: { id: stream.id },
        data: { description, rendered_description: renderMarkdown(description) },
      });
      await sendToMetadataUsers(deps, tx, current, 'description', current.description, {
        rendered_description: current.rendered_description,
      });
    }
    if (newName !== undefined) {
      const oldName = current.name;
      current = await db.stream.update({ where: { id: stream.id }, data: { name: newName } });
      const audience = await metadataAccessUserIds(tx.db, current);
      await sendStreamUpdateEvent(deps, tx, { ...current, name: oldName }, 'name', newName, audience);
    }
    if (update.folderId !== undefined && update.folderId !== current.folder_id) {
      current = await db.stream.update({ where: { id: stream.id }, data: { folder_id: update.folderId } });
      await sendToMetadataUsers(deps, tx, current, 'folder_id', current.folder_id);
    }
    for (const change of settingChanges) {
      current = await applySettingChange(
        deps,
        tx,
        current,
        change.name,
        newHolders.get(change.name)!,
        change.previousGroupId,
      );
    }
  });
}

async function hasNamedTopics(db: Tx['db'], streamId: number): Promise<boolean> {
  const rows = await db.$queryRaw<
    { found: boolean }[]
  >`SELECT EXISTS (SELECT 1 FROM message WHERE stream_id = ${streamId} AND topic <> '') AS found`;
  return rows[0].found;
}

async function sendToMetadataUsers(
  deps: ChannelsDeps,
  tx: Tx,
  stream: Stream,
  property: string,
  value: EventSettingValue,
  extra: StreamUpdateExtra = {},
): Promise<void> {
  await sendStreamUpdateEvent(deps, tx, stream, property, value, await metadataAccessUserIds(tx.db, stream), extra);
}

/**
 * A change that may change who can see the channel: those who gain sight get it created (and
 * its subscribers), those who lose it get it deleted, everyone else an update event.
 */
async function applyVisibilityChange(
  deps: ChannelsDeps,
  tx: Tx,
  stream: Stream,
  change: () => Promise<unknown>,
  describe: (after: Stream) => { property: string; value: EventSettingValue; extra?: StreamUpdateExtra },
): Promise<Stream> {
  const before = new Set(await metadataAccessUserIds(tx.db, stream));
  await change();
  const after = await tx.db.stream.findUniqueOrThrow({ where: { id: stream.id } });
  const audience = await metadataAccessUserIds(tx.db, after);
  const audienceSet = new Set(audience);
  const gained = audience.filter((id) => !before.has(id));
  const kept = audience.filter((id) => before.has(id));
  const lost = [...before].filter((id) => !audienceSet.has(id));
  const { property, value, extra } = describe(after);
  await sendStreamUpdateEvent(deps, tx, after, property, value, kept, extra);
  if (gained.length) {
    await sendStreamCreationEvent(deps, tx, after, gained);
    const subscribers = (await activeSubscriberIds(tx.db, [after.id])).get(after.id)!;
    if (subscribers.length) {
      await deps.bus.sendEventOnCommit(
        tx,
        after.realm_id,
        { type: 'subscription', op: 'peer_add', stream_ids: [after.id], user_ids: subscribers },
        gained,
      );
    }
  }
  await sendStreamDeletionEvent(deps, tx, [after], lost);
  return after;
}

async function applySettingChange(
  deps: ChannelsDeps,
  tx: Tx,
  stream: Stream,
  name: string,
  groupId: number,
  previousGroupId: number | undefined,
): Promise<Stream> {
  const value = (await groupSettingApiValues(tx.db, [groupId])).get(groupId)!;
  const replace = () => replaceStreamSetting(tx.db, stream.realm_id, stream.id, name, groupId, previousGroupId);
  const postPolicyBefore =
    name === 'can_send_message_group'
      ? (await streamApiDicts(tx.db, [stream])).get(stream.id)!.stream_post_policy
      : null;
  if (grantsMetadataAccess(name)) {
    await applyVisibilityChange(deps, tx, stream, replace, () => ({ property: name, value }));
  } else {
    await replace();
    await sendToMetadataUsers(deps, tx, stream, name, value);
  }
  if (postPolicyBefore !== null) {
    const postPolicyAfter = (await streamApiDicts(tx.db, [stream])).get(stream.id)!.stream_post_policy;
    if (postPolicyAfter !== postPolicyBefore) {
      await sendToMetadataUsers(deps, tx, stream, 'stream_post_policy', postPolicyAfter);
      await sendToMetadataUsers(deps, tx, stream, 'is_announcement_only', postPolicyAfter === 2);
    }
  }
  return tx.db.stream.findUniqueOrThrow({ where: { id: stream.id } });
}
