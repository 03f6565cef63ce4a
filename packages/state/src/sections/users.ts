// Register state of the users domain (Zulip's fetch_initial_state_data for realm_user,
// realm_user_groups, user_settings and its legacy forms, custom_profile_fields,
// navigation_view, realm_linkifiers, realm_filters, realm_bot, alert_words and presence).

import { JsonText } from '@teamchat/core';
import {
  accessibleUserIds,
  ACCESSIBLE_EMAIL_VISIBILITIES,
  apiUserDict,
  avatarUrl,
  botDicts,
  crossRealmBotDicts,
  inaccessibleAmong,
  inaccessibleUserDict,
  isAdministrator,
  PROFILE_FIELD_TYPES,
  profileFieldDict,
  realmPermissions,
  realmPresence,
  realmUsersForApi,
  Role,
  roleFlags,
  userAlertWords,
  userGroupDicts,
  userSettings,
  type ApiUser,
  type ApiUserSource,
  type ProfileData,
  DISPLAY_SETTINGS_LEGACY,
  NOTIFICATION_SETTINGS_LEGACY,
} from '@teamchat/domain';
import { jsonList, jsonListBytes, patchJsonListElement, type JsonList } from '../realm-state-cache';
import type { StateContext, StateSection } from '../registry';
import { realmWidePart } from '../realm-wide';

async function profileDataByUser(ctx: StateContext): Promise<Map<number, ProfileData>> {
  const values = await ctx.db.customProfileFieldValue.findMany({
    where: { field: { realm_id: ctx.realm.id } },
    orderBy: { field_id: 'asc' },
  });
  const byUser = new Map<number, ProfileData>();
  for (const row of values) {
    const data = byUser.get(row.user_profile_id) ?? {};
    data[String(row.field_id)] =
      row.rendered_value === null ? { value: row.value } : { value: row.value, rendered_value: row.rendered_value };
    byUser.set(row.user_profile_id, data);
  }
  return byUser;
}

interface UserLists {
  active: JsonList;
  inactive: JsonList;
}

/**
 * realm_users and realm_non_active_users for a viewer who may see everyone: the same for every
 * viewer of one email-visibility class, but for the viewer's own delivery_email, which
 * they always see (patched in).
 */
async function unrestrictedUserLists(ctx: StateContext): Promise<Record<string, JsonText>> {
  const { db, realm, user, options } = ctx;
  const emailClass = (ACCESSIBLE_EMAIL_VISIBILITIES[user.role] ?? []).join('.');
  const lists = await realmWidePart<UserLists>(
    ctx,
    `users:${emailClass}:${options.clientGravatar}`,
    async () => {
      const [users, profiles] = await Promise.all([realmUsersForApi(db, realm.id), profileDataByUser(ctx)]);
      // Anyone of the viewer's class but not the viewer: the id no user has.
      const classViewer = { id: 0, role: user.role };
      const dicts = users.map((target) =>
        apiUserDict(target, classViewer, {
          clientGravatar: options.clientGravatar,
          profileData: profiles.get(target.id) ?? {},
        }),
      );
      return {
        active: jsonList(
          dicts.filter((dict) => dict.is_active),
          (dict) => dict.user_id,
        ),
        inactive: jsonList(
          dicts.filter((dict) => !dict.is_active),
          (dict) => dict.user_id,
        ),
      };
    },
    (lists) => jsonListBytes(lists.active) + jsonListBytes(lists.inactive),
  );
  const withOwnEmail = (list: JsonList) =>
    new JsonText(
      patchJsonListElement(list, user.id, (own) => ({
        ...own,
        delivery_email: user.delivery_email,
      })),
    );
  return { realm_users: withOwnEmail(lists.active), realm_non_active_users: withOwnEmail(lists.inactive) };
}

/**
 * realm_users and realm_non_active_users for a spectator: everyone (Zulip's
 * check_user_can_access_all_users), as a guest sees them, without profile data.
 */
async function spectatorUserLists(ctx: StateContext): Promise<Record<string, ApiUser[]>> {
  const { db, realm, user } = ctx;
  const dicts = (await realmUsersForApi(db, realm.id)).map((target) => ({
    active: target.is_active,
    dict: apiUserDict(target, user, { clientGravatar: false }),
  }));
  return {
    realm_users: dicts.filter((entry) => entry.active).map((entry) => entry.dict),
    realm_non_active_users: dicts.filter((entry) => !entry.active).map((entry) => entry.dict),
  };
}

/** realm_users and realm_non_active_users for a guest restricted to the users they share a conversation with. */
async function restrictedUserLists(ctx: StateContext, visibleIds: Set<number>): Promise<Record<string, ApiUser[]>> {
  const { db, realm, user, options } = ctx;
  const [users, profiles] = await Promise.all([realmUsersForApi(db, realm.id), profileDataByUser(ctx)]);
  const hidden = inaccessibleAmong(visibleIds, users);
  const listIncomplete = Boolean(options.capabilities.user_list_incomplete);
  const dict = (target: ApiUserSource) =>
    hidden.has(target.id)
      ? inaccessibleUserDict(target.id, realm)
      : apiUserDict(target, user, {
          clientGravatar: options.clientGravatar,
          profileData: profiles.get(target.id) ?? {},
        });
  const visible = (target: ApiUserSource) => !(listIncomplete && hidden.has(target.id));
  return {
    realm_users: users.filter((target) => target.is_active && visible(target)).map(dict),
    realm_non_active_users: users.filter((target) => !target.is_active && visible(target)).map(dict),
  };
}

const realmUserSection: StateSection = {
  eventType: 'realm_user',
  async fetch(ctx) {
    const { db, realm, user } = ctx;
    const visibleIds = ctx.spectator ? null : await accessibleUserIds(db, user);
    const lists = ctx.spectator
      ? await spectatorUserLists(ctx)
      : visibleIds
        ? await restrictedUserLists(ctx, visibleIds)
        : await unrestrictedUserLists(ctx);
    const permissions = await realmPermissions(db, user, [
      'can_create_public_channel_group',
      'can_create_private_channel_group',
      'can_create_web_public_channel_group',
      'can_add_subscribers_group',
      'can_invite_users_group',
    ]);
    const publicChannels = permissions.can_create_public_channel_group;
    const privateChannels = permissions.can_create_private_channel_group;
    const flags = roleFlags(user.role);
    return {
      ...lists,
      // The system bots of zulipinternal, who send into every organisation (the notification bot).
      cross_realm_bots: await crossRealmBotDicts(db, user),
      avatar_source: user.avatar_source,
      avatar_url: avatarUrl(user),
      avatar_url_medium: avatarUrl(user, { medium: true }),
      can_create_streams: publicChannels || privateChannels,
      can_create_public_streams: publicChannels,
      can_create_private_streams: privateChannels,
      can_create_web_public_streams: permissions.can_create_web_public_channel_group && realm.enable_spectator_access,
      can_subscribe_other_users: permissions.can_add_subscribers_group,
      can_invite_others_to_realm: permissions.can_invite_users_group,
      is_admin: flags.is_admin,
      is_owner: flags.is_owner,
      // The role itself, as Zulip's UserProfile.is_moderator (isModerator is "moderator or above").
      is_moderator: user.role === Role.MODERATOR,
      is_guest: flags.is_guest,
      user_id: user.id,
      email: user.email,
      delivery_email: user.delivery_email,
      full_name: user.full_name,
    };
  },
};

const realmUserGroupsSection: StateSection = {
  eventType: 'realm_user_groups',
  async fetch(ctx) {
    const includeDeactivated = Boolean(ctx.options.capabilities.include_deactivated_groups);
    const groups = await realmWidePart(
      ctx,
      `groups:${includeDeactivated}`,
      async () => new JsonText(JSON.stringify(await userGroupDicts(ctx.db, ctx.realm.id, { includeDeactivated }))),
      (json) => json.text.length,
    );
    return { realm_user_groups: groups };
  },
};

/** Legacy top-level keys for clients without user_settings_object (Zulip adds the choice lists too). */
const LEGACY_NOTIFICATION_KEYS = [...NOTIFICATION_SETTINGS_LEGACY, 'available_notification_sounds'];
const LEGACY_DISPLAY_KEYS = [...DISPLAY_SETTINGS_LEGACY, 'emojiset_choices'];

const userSettingsSection: StateSection = {
  eventType: 'user_settings',
  async fetch({ user }) {
    return { user_settings: userSettings(user) };
  },
};

function legacySettingsSection(eventType: string, names: readonly string[]): StateSection {
  return {
    eventType,
    async fetch({ user, options }) {
      if (options.capabilities.user_settings_object) return {};
      const settings = userSettings(user) as Record<string, unknown>;
      return Object.fromEntries(names.map((name) => [name, settings[name]]));
    },
  };
}

const customProfileFieldsSection: StateSection = {
  eventType: 'custom_profile_fields',
  async fetch(ctx) {
    // Spectators cannot see people's profiles (Zulip sends them no fields, only the types).
    const fields = ctx.spectator
      ? []
      : await realmWidePart(ctx, 'profile-fields', async () => {
          const rows = await ctx.db.customProfileField.findMany({
            where: { realm_id: ctx.realm.id },
            orderBy: [{ order: 'asc' }, { id: 'asc' }],
          });
          return rows.map(profileFieldDict);
        });
    return {
      custom_profile_fields: fields,
      custom_profile_field_types: Object.fromEntries(
        PROFILE_FIELD_TYPES.map((type) => [type.keyword, { id: type.id, name: type.name }]),
      ),
    };
  },
};

const navigationViewsSection: StateSection = {
  eventType: 'navigation_view',
  async fetch({ db, user }) {
    const views = await db.navigationView.findMany({ where: { user_profile_id: user.id }, orderBy: { id: 'asc' } });
    return {
      navigation_views: views.map((view) => ({ fragment: view.fragment, is_pinned: view.is_pinned, name: view.name })),
    };
  },
};

const realmLinkifiersSection: StateSection = {
  eventType: 'realm_linkifiers',
  async fetch(ctx) {
    // A client without linkifier_url_template cannot render URL templates: Zulip gives it none
    // (and its apply_event ignores realm_linkifiers events for it).
    if (!ctx.options.capabilities.linkifier_url_template) return { realm_linkifiers: [] };
    const linkifiers = await realmWidePart(ctx, 'linkifiers', async () => {
      const rows = await ctx.db.linkifier.findMany({
        where: { realm_id: ctx.realm.id },
        orderBy: [{ order: 'asc' }, { id: 'asc' }],
      });
      return rows.map((l) => ({ pattern: l.pattern, url_template: l.url_template, id: l.id }));
    });
    return { realm_linkifiers: linkifiers };
  },
};

/** Zulip stopped filling the legacy realm_filters at feature level 176: always empty. */
const realmFiltersSection: StateSection = {
  eventType: 'realm_filters',
  async fetch() {
    return { realm_filters: [] };
  },
};

const realmBotSection: StateSection = {
  eventType: 'realm_bot',
  async fetch({ db, realm, user, serverSecret, spectator }) {
    if (spectator) return { realm_bots: [] };
    // Administrators see every bot, others the ones they own (Zulip's get_owned_bot_dicts),
    // with their keys: bots' keys are kept sealed to be shown again (docs/adr/0007).
    const owned = isAdministrator(user.role) ? {} : { bot_owner_id: user.id };
    return { realm_bots: await botDicts(db, { realm_id: realm.id, ...owned }, serverSecret) };
  },
};

/** The user's alert words, oldest first (Zulip's user_alert_words). */
const alertWordsSection: StateSection = {
  eventType: 'alert_words',
  async fetch({ db, user }) {
    return { alert_words: await userAlertWords(db, user.id) };
  },
};

const presenceSection: StateSection = {
  eventType: 'presence',
  async fetch({ db, user, options, spectator }) {
    // Spectators see nobody's presence (the app shows no user list to them).
    if (spectator) return { presences: {}, server_timestamp: Date.now() / 1000 };
    return realmPresence(db, user, {
      slim: Boolean(options.slimPresence),
      historyDays: options.presenceHistoryLimitDays,
    });
  },
};

export const USER_SECTIONS: StateSection[] = [
  realmUserSection,
  realmUserGroupsSection,
  userSettingsSection,
  legacySettingsSection('update_display_settings', LEGACY_DISPLAY_KEYS),
  legacySettingsSection('update_global_notifications', LEGACY_NOTIFICATION_KEYS),
  customProfileFieldsSection,
  navigationViewsSection,
  realmLinkifiersSection,
  realmFiltersSection,
  realmBotSection,
  alertWordsSection,
  presenceSection,
];
