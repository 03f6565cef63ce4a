// PATCH /realm (Zulip's update_realm with do_set_realm_property,
// do_change_realm_permission_group_setting and do_set_realm_stream): who may change what, then
// every change in one transaction, each announced to the whole organisation after the commit:
// realm/update {property, value} for plain settings, realm/update_dict {property: "default",
// data} for group settings and the two message-editing settings that Zulip sends that way.

import type { ZulipEventOf } from '@teamchat/bus';
import { JsonableError, OrganizationOwnerRequiredError, v } from '@teamchat/core';
import { Prisma, transaction, type Realm, type Tx, type UserProfile } from '@teamchat/db';
import {
  groupForSettingValue,
  groupSettingApiValues,
  groupSettingIds,
  isOwner,
  lockRealm,
  REALM_PERMISSION_SETTINGS,
  realmSettings,
  replaceGroupSetting,
  requestedSettingValue,
  Role,
  settingConstraints,
  SystemGroup,
  systemGroupId,
  type GroupSettingUpdate,
  type GroupSettingValue,
  type SystemGroupName,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import {
  currentRealmProperty,
  OWNER_ONLY_GROUP_SETTINGS,
  REALM_PROPERTIES,
  type RealmChannelSetting,
  type RealmSettingValue,
} from '../lib/realm-settings';
import { activeUserIds, hasWaitedFullMemberPeriod } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

/** The authentication methods this server has; the others register lists are unavailable. */
const AVAILABLE_AUTHENTICATION_METHODS = ['Email'];

export interface RealmUpdate {
  /** Plain settings, by parameter name (REALM_PROPERTIES). */
  properties: Record<string, RealmSettingValue>;
  /** Group-valued settings as {new, old?} (REALM_PERMISSION_SETTINGS). */
  groupSettings: Record<string, GroupSettingUpdate>;
  channels: Partial<Record<RealmChannelSetting, number>>;
  authenticationMethods?: Record<string, boolean>;
  stringId?: string;
}

/** Zulip's update_realm checks before any change: owner-only settings and values needing the realm. */
function checkRealmUpdate(actor: UserProfile, update: RealmUpdate): void {
  const owner = isOwner(actor.role);
  if (update.authenticationMethods !== undefined) {
    if (!owner) throw new OrganizationOwnerRequiredError();
    checkAuthenticationMethods(update.authenticationMethods);
  }
  const ownerOnly =
    Object.keys(update.properties).some((name) => REALM_PROPERTIES[name].ownerOnly) ||
    Object.keys(update.groupSettings).some((name) => OWNER_ONLY_GROUP_SETTINGS.has(name));
  if (ownerOnly && !owner) throw new OrganizationOwnerRequiredError();
}

/** Zulip's validate_authentication_methods_dict_from_api, for a server whose only method is Email. */
function checkAuthenticationMethods(methods: Record<string, boolean>): void {
  for (const [name, enabled] of Object.entries(methods)) {
    // The web app sends every method register lists; the unavailable ones may only stay off.
    if (!AVAILABLE_AUTHENTICATION_METHODS.includes(name) && enabled) {
      throw new JsonableError(
        `Invalid authentication method: ${name}. Valid methods are: [${AVAILABLE_AUTHENTICATION_METHODS.map((m) => `'${m}'`).join(', ')}]`,
      );
    }
  }
  if (!Object.values(methods).includes(true)) {
    throw new JsonableError('At least one authentication method must be enabled.');
  }
}

/** Applies `update` and answers what changed, as Zulip's update_realm does (strings as "updated"). */
export async function doUpdateRealm(
  deps: Deps,
  actor: UserProfile,
  update: RealmUpdate,
): Promise<Record<string, unknown>> {
  checkRealmUpdate(actor, update);
  if (update.stringId !== undefined) {
    if (!isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
    // Only demo organisations may change their subdomain, and this server has none.
    throw new JsonableError('Must be a demo organization.');
  }
  const realmId = actor.realm_id;
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const realm = await tx.db.realm.findUniqueOrThrow({ where: { id: realmId } });
    const audience = await activeUserIds(tx.db, realmId);
    const announce = (event: ZulipEventOf<'realm'>) => deps.bus.sendEventOnCommit(tx, realmId, event, audience);
    const data: Record<string, unknown> = {};

    const properties = withLinkedTopicSettings(realm, update.properties);
    const columns: Prisma.RealmUpdateInput = {};
    const jsonChanges: Record<string, RealmSettingValue> = {};
    const settings = realmSettings(realm) as Record<string, unknown>;
    for (const [name, value] of Object.entries(properties)) {
      const spec = REALM_PROPERTIES[name];
      if (currentRealmProperty(realm, spec, settings) === value) continue;
      if ('json' in spec.storage) jsonChanges[spec.storage.json] = value;
      else Object.assign(columns, { [spec.storage.column]: value });
      await announce(
        spec.updateDict
          ? { type: 'realm', op: 'update_dict', property: 'default', data: { [name]: value } }
          : { type: 'realm', op: 'update', property: name, value },
      );
      if (name in update.properties) data[name] = typeof value === 'string' ? 'updated' : value;
    }

    for (const [name, channelId] of Object.entries(update.channels) as [RealmChannelSetting, number][]) {
      const value = await checkAnnouncementChannel(tx, realmId, name, channelId);
      if (settings[`realm_${name}`] === value) continue;
      jsonChanges[`realm_${name}`] = value;
      await announce({ type: 'realm', op: 'update', property: name, value });
      data[name] = channelId;
    }

    if (Object.keys(columns).length > 0) await tx.db.realm.update({ where: { id: realmId }, data: columns });
    if (Object.keys(jsonChanges).length > 0) {
      await tx.db.$executeRaw`
        UPDATE realm SET settings = settings || ${JSON.stringify(jsonChanges)}::jsonb WHERE id = ${realmId}`;
    }
    if (columns.waiting_period_threshold !== undefined) {
      await updateFullMembersGroup(deps, tx, realmId, columns.waiting_period_threshold as number, audience);
    }

    const changedGroups = await changeGroupSettings(tx, realmId, update.groupSettings);
    for (const [name, { requested, apiValue }] of Object.entries(changedGroups)) {
      await announce({ type: 'realm', op: 'update_dict', property: 'default', data: { [name]: apiValue } });
      data[name] = requested;
    }
    return data;
  });
}

/**
 * The 10.2 web app sets mandatory_topics; clients of feature level 392 set topics_policy, which
 * replaced it (and which sending a message acts on). A change to one changes the other too,
 * unless the request sets both.
 */
function withLinkedTopicSettings(
  realm: Realm,
  properties: Record<string, RealmSettingValue>,
): Record<string, RealmSettingValue> {
  const { mandatory_topics: mandatory, topics_policy: policy } = properties;
  if (mandatory !== undefined && policy === undefined) {
    return { ...properties, topics_policy: mandatory ? 'disable_empty_topic' : 'allow_empty_topic' };
  }
  if (policy !== undefined && mandatory === undefined && policy !== realm.topics_policy) {
    return { ...properties, mandatory_topics: policy === 'disable_empty_topic' };
  }
  return properties;
}

/** The stored value of a channel setting: the channel's id, or -1 for none (Zulip's access_stream_by_id). */
async function checkAnnouncementChannel(
  tx: Tx,
  realmId: number,
  name: RealmChannelSetting,
  channelId: number,
): Promise<number> {
  if (channelId < 0) return -1;
  if (!v.isDatabaseId(channelId)) throw new JsonableError('Invalid channel ID');
  const stream = await tx.db.stream.findFirst({
    where: { id: channelId, realm_id: realmId, is_archived: false },
    select: { id: true, invite_only: true },
  });
  if (!stream) throw new JsonableError('Invalid channel ID');
  if (name === 'moderation_request_channel_id' && !stream.invite_only) {
    throw new JsonableError('Moderation request channel must be private.');
  }
  return stream.id;
}

/**
 * Each requested group setting that changes: the value as requested (Zulip's answer) and as the
 * API shows it now (the event's). A new anonymous group replaces the one the setting held.
 */
async function changeGroupSettings(
  tx: Tx,
  realmId: number,
  requests: Record<string, GroupSettingUpdate>,
): Promise<Record<string, { requested: GroupSettingValue; apiValue: GroupSettingValue }>> {
  const changed: Record<string, { requested: GroupSettingValue; apiValue: GroupSettingValue }> = {};
  if (Object.keys(requests).length === 0) return changed;
  const currentIds = await groupSettingIds(tx.db, 'realm', realmId);
  const currentValues = await groupSettingApiValues(tx.db, Object.values(currentIds));
  const nobodyId = await systemGroupId(tx.db, realmId, SystemGroup.NOBODY);
  // In Zulip's order of the settings, whatever the order of the request.
  for (const [name, config] of Object.entries(REALM_PERMISSION_SETTINGS)) {
    const request = requests[name];
    if (!request) continue;
    // A realm created before the setting existed holds its default.
    const currentId =
      currentIds[name] ?? (await systemGroupId(tx.db, realmId, config.default_group_name as SystemGroupName));
    const current = currentValues.get(currentId) ?? currentId;
    const requested = requestedSettingValue(current, request, nobodyId);
    if (requested === null) continue;
    const holder = await groupForSettingValue(tx.db, realmId, name, requested, settingConstraints(config));
    await replaceGroupSetting(tx.db, realmId, 'realm', realmId, name, holder, currentIds[name]);
    const apiValue = (await groupSettingApiValues(tx.db, [holder])).get(holder)!;
    changed[name] = { requested, apiValue };
  }
  return changed;
}

/**
 * Zulip's update_users_in_full_members_system_group after the waiting period changed: members
 * who have waited `threshold` whole days are full members, and nobody else is.
 */
async function updateFullMembersGroup(
  deps: Deps,
  tx: Tx,
  realmId: number,
  threshold: number,
  audience: number[],
): Promise<void> {
  const [fullMembersId, membersId] = await Promise.all([
    systemGroupId(tx.db, realmId, SystemGroup.FULL_MEMBERS),
    systemGroupId(tx.db, realmId, SystemGroup.MEMBERS),
  ]);
  const rows = await tx.db.userGroupMembership.findMany({
    where: { user_group_id: { in: [fullMembersId, membersId] } },
    select: { user_group_id: true, user: { select: { id: true, role: true, date_joined: true } } },
  });
  const now = Date.now();
  const waited = (user: { date_joined: Date }) =>
    hasWaitedFullMemberPeriod({ waiting_period_threshold: threshold }, user.date_joined, now);
  const fullMembers = rows.filter((row) => row.user_group_id === fullMembersId).map((row) => row.user);
  const fullMemberIds = new Set(fullMembers.map((user) => user.id));
  const removed = fullMembers.filter((user) => !waited(user) || user.role !== Role.MEMBER).map((user) => user.id);
  const added = rows
    .filter((row) => row.user_group_id === membersId && !fullMemberIds.has(row.user.id) && waited(row.user))
    .map((row) => row.user.id);
  if (removed.length > 0) {
    await tx.db.userGroupMembership.deleteMany({
      where: { user_group_id: fullMembersId, user_profile_id: { in: removed } },
    });
    await deps.bus.sendEventOnCommit(
      tx,
      realmId,
      { type: 'user_group', op: 'remove_members', group_id: fullMembersId, user_ids: removed },
      audience,
    );
  }
  if (added.length > 0) {
    await tx.db.userGroupMembership.createMany({
      data: added.map((id) => ({ user_group_id: fullMembersId, user_profile_id: id })),
    });
    await deps.bus.sendEventOnCommit(
      tx,
      realmId,
      { type: 'user_group', op: 'add_members', group_id: fullMembersId, user_ids: added },
      audience,
    );
  }
}
