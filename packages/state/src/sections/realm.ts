// The realm's settings in POST /register (Zulip's fetch_initial_state_data for the "realm"
// event type): the realm row, the settings it stores in its JSON column, Zulip's defaults for
// everything else, and each realm group-setting permission in its API form. Server-wide limits
// come from the server section.

import {
  EMOJI_DATA_PATH,
  groupSettingValues,
  placeholderEmailDomain,
  realmDomains,
  realmIconUrl,
  realmLogoUrl,
  realmSettingGroup,
  realmSettings,
  realmUrl,
  SystemGroup,
} from '@teamchat/domain';
import type { StateSection } from '../registry';
import { realmWidePart } from '../realm-wide';
import { realmEmojiSection } from './realm-emoji';
import { scheduledMessagesSection } from './scheduled-messages';
import { mutedUsersSection } from './muted-users';
import { realmPlaygroundsSection } from './realm-playgrounds';
import { savedSnippetsSection } from './saved-snippets';
import { userSettingsDefaultsSection } from './user-settings-defaults';
import { userStatusSection } from './user-status';

/**
 * The legacy wildcard-mention policy for each system group that can hold the permission
 * (Zulip's SYSTEM_GROUPS_TO_WILDCARD_MENTION_POLICY_MAP). Any other group maps to "everyone":
 * the legacy value describes a superset of who may mention many users. Deprecated in Zulip
 * 10, but clients still require it (the mobile app reads it unconditionally).
 */
const WILDCARD_MENTION_POLICY_OF_GROUP: Record<string, number> = {
  [SystemGroup.EVERYONE]: 1,
  [SystemGroup.MEMBERS]: 2,
  [SystemGroup.FULL_MEMBERS]: 3,
  [SystemGroup.ADMINISTRATORS]: 5,
  [SystemGroup.NOBODY]: 6,
  [SystemGroup.MODERATORS]: 7,
};
const WILDCARD_MENTION_POLICY_EVERYONE = 1;

const AUTHENTICATION_METHODS = [
  'Email',
  'Dev',
  'LDAP',
  'RemoteUser',
  'GitHub',
  'AzureAD',
  'GitLab',
  'Apple',
  'Google',
  'SAML',
  'OpenID Connect',
];

export const realmSection: StateSection = {
  eventType: 'realm',
  async fetch(ctx) {
    const { db, realm, scheme } = ctx;
    const settings = realmSettings(realm);
    const { groupSettings, mentionManyGroup } = await realmWidePart(ctx, 'realm-group-settings', async () => ({
      groupSettings: await groupSettingValues(db, 'realm', realm.id),
      mentionManyGroup: await realmSettingGroup(db, realm.id, 'can_mention_many_users_group'),
    }));
    const url = realmUrl(realm, scheme);
    return {
      realm_name: realm.name,
      // As written (Zulip's property_types): the settings page edits it; server_settings has the HTML.
      realm_description: realm.description,
      realm_date_created: Math.floor(realm.date_created.getTime() / 1000),
      realm_invite_required: realm.invite_required,
      realm_default_language: realm.default_language,
      realm_waiting_period_threshold: realm.waiting_period_threshold,
      realm_enable_spectator_access: realm.enable_spectator_access,
      realm_message_retention_days: realm.message_retention_days,
      realm_upload_quota_mib: realm.upload_quota_bytes === null ? null : Number(realm.upload_quota_bytes / 1048576n),
      ...settings,
      // Derived, as Zulip's register derives them: the legacy edit-history flag from its policy,
      // and the Jitsi server calls use. The server has no default one (server_jitsi_server_url
      // null), and zulip.yaml allows no null here: only an organisation's own is given.
      realm_allow_edit_history: settings.realm_message_edit_history_visibility_policy !== 'none',
      ...(typeof settings.realm_jitsi_server_url === 'string'
        ? { jitsi_server_url: settings.realm_jitsi_server_url }
        : {}),
      ...Object.fromEntries(Object.entries(groupSettings).map(([name, value]) => [`realm_${name}`, value])),
      realm_wildcard_mention_policy:
        WILDCARD_MENTION_POLICY_OF_GROUP[mentionManyGroup?.name ?? ''] ?? WILDCARD_MENTION_POLICY_EVERYONE,
      server_emoji_data_url: `${url}${EMOJI_DATA_PATH}`,
      realm_uri: url,
      realm_url: url,
      realm_icon_url: realmIconUrl(realm),
      realm_icon_source: realm.icon_source,
      realm_logo_url: realmLogoUrl(realm, false),
      realm_logo_source: realm.logo_source,
      realm_night_logo_url: realmLogoUrl(realm, true),
      realm_night_logo_source: realm.night_logo_source,
      realm_bot_domain: placeholderEmailDomain(realm),
      realm_authentication_methods: Object.fromEntries(
        AUTHENTICATION_METHODS.map((name) =>
          name === 'Email'
            ? [name, { enabled: true, available: true }]
            : [
                name,
                {
                  enabled: false,
                  available: false,
                  unavailable_reason: 'This authentication method is not configured on this server.',
                },
              ],
        ),
      ),
      realm_available_video_chat_providers: {
        disabled: { name: 'None', id: 0 },
        jitsi_meet: { name: 'Jitsi Meet', id: 1 },
      },
      realm_default_external_accounts: {
        github: { name: 'GitHub', text: 'GitHub username', hint: '', url_pattern: 'https://github.com/%(username)s' },
        twitter: {
          name: 'Twitter',
          text: 'Twitter username',
          hint: '',
          url_pattern: 'https://twitter.com/%(username)s',
        },
      },
      realm_is_zephyr_mirror_realm: false,
      realm_email_auth_enabled: true,
      realm_password_auth_enabled: true,
      realm_push_notifications_enabled: false,
      realm_push_notifications_enabled_end_timestamp: null,
      realm_plan_type: 1,
      // What a spectator cannot do shows as off (Zulip's fetch_initial_state_data): no editing,
      // and no presence (which also hides the user list).
      ...(ctx.spectator ? { realm_allow_message_editing: false, realm_presence_disabled: true } : {}),
    };
  },
};

/**
 * Event types whose features hold no data on this server (no custom emoji, scheduled messages,
 * saved snippets, muted users, user statuses or code playgrounds can be created yet): their state
 * is empty, but present, because clients that ask for it read it unconditionally (zulip-terminal
 * reads realm_emoji at start-up; the mobile app fails to register without muted_users and
 * user_status). The allowed email domains, listed here too, are real.
 */
export const EMPTY_FEATURE_SECTIONS: StateSection[] = [
  realmEmojiSection,
  { eventType: 'realm_domains', fetch: async ({ db, realm }) => ({ realm_domains: await realmDomains(db, realm.id) }) },
  scheduledMessagesSection,
  savedSnippetsSection,
  mutedUsersSection,
  userStatusSection,
  realmPlaygroundsSection,
  // The defaults for new users' settings: a section of its own, as Zulip's fetch_event_types names it.
  userSettingsDefaultsSection,
];
