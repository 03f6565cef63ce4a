// A Slack export as a Teamchat organisation archive (docs/export-format.md), converted as Zulip
// 10.2's Slack importer converts one (zerver/data_import/slack.py): users with their roles
// (owner, administrator, member, guest), deactivated, bot and shared-channel ("mirror dummy")
// accounts; public, private and archived channels and their members; direct messages and group
// direct messages (mpims); Slack threads as topics "YYYY-MM-DD Slack thread N"; reactions by
// Zulip's emoji names; custom emoji; uploaded files; custom profile fields; message text as
// Zulip Markdown (markdown.ts). The archive's ids start at 1 and importRealm gives them new ones.
//
// Zulip reads the user list (with email addresses) and custom emoji from Slack's API with a
// token; here they come from files: the export's users.json, or the API's users.list answer
// when given (its members carry the addresses an export may lack), and emoji.list's answer.
// Nothing is downloaded (no network): avatars, emoji images and uploads are listed with their
// Slack URLs, and uploads whose bytes are not in the export are marked missing in the archive.
//
// Differences from Zulip, each because Teamchat has no such thing: no long-term-idle users (every
// subscriber gets its user_message row), no realm icon download, no Recipient rows (direct
// messages are keyed by their participants).

import crypto from 'node:crypto';
import {
  directSystemGroupsForRole,
  dmKey,
  MessageFlag,
  REALM_GROUP_SETTING_DEFAULTS,
  renderMarkdown,
  renderMessageMarkdown,
  Role,
  STREAM_COLORS,
  STREAM_GROUP_SETTING_DEFAULTS,
  SYSTEM_GROUPS,
  SystemGroup,
  truncateText,
  unicodeEmojiCodeToNames,
  USER_GROUP_PERMISSION_SETTINGS,
  type MarkdownData,
  type MentionableUser,
  type SystemGroupName,
} from '@teamchat/domain';
import { EXPORT_FORMAT, EXPORT_FORMAT_VERSION, EXPORT_TABLES } from '../tables';
import { SLACK_EMOJI_NAMES } from './emoji-names';
import { convertToZulipMarkdown, slackUserFullName, type MarkdownContext } from './markdown';
import { SlackImportError, type SlackSource } from './source';

type Row = Record<string, unknown>;

export interface SlackUser {
  id: string;
  name: string;
  team_id?: string;
  team_domain?: string;
  deleted?: boolean;
  real_name?: string;
  tz?: string | null;
  is_bot?: boolean;
  is_admin?: boolean;
  is_owner?: boolean;
  is_primary_owner?: boolean;
  is_restricted?: boolean;
  is_ultra_restricted?: boolean;
  is_mirror_dummy?: boolean;
  is_integration_bot?: boolean;
  profile: {
    email?: string;
    real_name?: string;
    real_name_normalized?: string;
    first_name?: string;
    bot_id?: string;
    avatar_hash?: string;
    image_72?: string;
    phone?: string;
    skype?: string;
    fields?: Record<string, { value: string }> | null;
  };
}

interface SlackChannel {
  id: string;
  name: string;
  created: string | number;
  is_archived?: boolean;
  members: string[];
  purpose?: { value: string };
}

interface SlackFile {
  id?: string;
  name: string;
  title?: string;
  mimetype?: string;
  url_private: string;
  size?: number;
  created?: number;
  timestamp?: number;
  mode?: string;
  file_access?: string;
  user?: string;
}

interface SlackMessage {
  ts: string;
  user?: string;
  text?: string;
  subtype?: string;
  thread_ts?: string;
  file?: SlackFile;
  files?: SlackFile[];
  mimetype?: string;
  comment?: { user: string };
  reactions?: { name: string; users: string[] }[];
  bot_id?: string;
  username?: string;
  icons?: { image_72?: string };
  channel_name?: string;
  mpim_name?: string;
  pm_name?: string;
}

export interface ConvertSlackOptions {
  source: SlackSource;
  subdomain: string;
  /** The new organisation's host: its domain names users Slack gives no address (bots, slackbot). */
  host: string;
  /** Slack's users.list answer ({members: [...]} or the list); default: the export's users.json. */
  users?: SlackUser[];
  /** Slack's emoji.list answer: name to image URL (or "alias:other"). */
  customEmoji?: Record<string, string>;
  /** Slack threads as topics of their own (Zulip's default; --no-convert-slack-threads turns it off). */
  convertThreads?: boolean;
  now?: Date;
}

/** A file Zulip would download from Slack. */
export interface RemoteFile {
  url: string;
  /** Where it goes: an attachment's path_id, or avatars and emoji (listed only). */
  key: string;
  kind: 'upload' | 'avatar' | 'emoji';
  /** Uploads: Slack's file id and name. */
  slackFileId?: string;
  name?: string;
}

/** Who received a message: its user_message rows, made as the archive is written (they are most of its rows). */
export interface MessageRecipients {
  messageId: number;
  /** Ascending; shared by the messages of one channel. */
  userIds: readonly number[];
  mentioned: readonly number[];
  isPrivate: boolean;
}

export interface SlackConversion {
  /** Every table of the archive but user_message (see recipients), in the archive's order. */
  tables: Map<string, Row[]>;
  recipients: MessageRecipients[];
  userMessageCount: number;
  remoteFiles: RemoteFile[];
  /** Slack user id to the archive's user id. */
  userIds: Map<string, number>;
  warnings: string[];
}

const REALM_ID = 1;
const MAX_MESSAGE_LENGTH = 10000;
const SKIPPED_SUBTYPES = new Set(['pinned_item', 'unpinned_item', 'channel_join', 'channel_leave', 'channel_name']);
const ME_SUBTYPES = new Set(['bot_add', 'sh_room_created', 'me_message']);
const DEFAULT_TIMEZONE = 'America/New_York';
const IMAGE_TYPES: Record<string, string> = {
  'image/png': 'png',
  'image/gif': 'gif',
  'image/jpeg': 'jpeg',
  'image/webp': 'webp',
  'image/avif': 'avif',
};
const EXTENSION_TYPES: Record<string, string> = {
  png: 'image/png',
  gif: 'image/gif',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  avif: 'image/avif',
};

let slackEmojiCodes: Map<string, string> | null = null;

/** Slack's emoji name to its codepoint (iamcal's data, as Zulip's slack_emoji_name_to_codepoint). */
export function slackEmojiCode(name: string): string | undefined {
  if (!slackEmojiCodes) {
    slackEmojiCodes = new Map();
    for (const entry of SLACK_EMOJI_NAMES.split(' ')) {
      const colon = entry.indexOf(':');
      for (const alias of entry.slice(colon + 1).split(',')) slackEmojiCodes.set(alias, entry.slice(0, colon));
    }
  }
  return slackEmojiCodes.get(name);
}

function readJson<T>(source: SlackSource, name: string): T {
  try {
    return JSON.parse(source.read(name).toString('utf8')) as T;
  } catch (error) {
    throw new SlackImportError(`${name}: ${(error as Error).message}`);
  }
}

function readOptional<T>(source: SlackSource, name: string): T[] {
  return source.has(name) ? readJson<T[]>(source, name) : [];
}

function iso(seconds: number): string {
  return new Date(Math.round(seconds * 1000)).toISOString();
}

/** Zulip's guess_type on a file name, for the image types an emoji or avatar may have. */
function imageTypeOf(name: string): string | undefined {
  return EXTENSION_TYPES[name.split('.').pop()?.toLowerCase() ?? ''];
}

/** Zulip's sanitize_name: letters, digits, "_", ".", "-". */
function sanitizeName(value: string): string {
  const kept = value
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}_\s.-]/gu, '')
    .trim();
  const name = kept.replace(/[-\s]+/g, '-');
  return name === '' || name === '.' || name === '..' ? 'uploaded-file' : name;
}

function messageSender(message: SlackMessage): string | undefined {
  if (message.user !== undefined) return message.user;
  return message.file?.user;
}

class Converter {
  readonly tables = new Map<string, Row[]>(EXPORT_TABLES.map((spec) => [spec.table, []]));
  readonly remoteFiles: RemoteFile[] = [];
  readonly warnings: string[] = [];
  readonly userIds = new Map<string, number>();
  private readonly users: SlackUser[];
  private readonly domain: string;
  private readonly now: Date;
  private readonly botEmails = new Map<string, string>();
  private readonly botEmailCounts = new Map<string, number>();
  private readonly channels = new Map<string, { slackId: string; streamId: number; recipients: number[] }>();
  private readonly mpims = new Map<string, number[]>();
  private readonly dms = new Map<string, [string, string]>();
  private readonly realmEmojiIds = new Map<string, number>();
  private markdownData!: MarkdownData;
  private nextId = { message: 1, reaction: 1, attachment: 1, subscription: 1 };
  private readonly recipients: MessageRecipients[] = [];
  private userMessageCount = 0;

  constructor(private readonly options: ConvertSlackOptions) {
    if (!options.source.has('channels.json')) {
      throw new SlackImportError('Import does not have the layout we expect from a Slack export!');
    }
    this.users = options.users ?? readJson<SlackUser[]>(options.source, 'users.json');
    this.domain = options.host.split(':')[0].toLowerCase();
    this.now = options.now ?? new Date();
  }

  private rows(table: string): Row[] {
    return this.tables.get(table)!;
  }

  run(): SlackConversion {
    this.realm();
    this.addUnknownUsers();
    this.convertUsers();
    this.systemGroups();
    this.convertChannels();
    this.convertEmoji();
    this.buildMarkdownData();
    this.convertMessages();
    return {
      tables: this.tables,
      recipients: this.recipients,
      userMessageCount: this.userMessageCount,
      remoteFiles: this.remoteFiles,
      userIds: this.userIds,
      warnings: this.warnings,
    };
  }

  private realm(): void {
    this.rows('realm').push({
      id: REALM_ID,
      string_id: this.options.subdomain,
      name: this.options.subdomain,
      description: 'Organization imported from Slack!',
      host: this.options.host.toLowerCase(),
      date_created: this.now.toISOString(),
    });
  }

  /**
   * Members of channels, group DMs and DMs, and senders, missing from the user list: Zulip asks
   * Slack's API about them (users of shared channels, made mirror dummies); without it they
   * become deactivated mirror dummies named by their Slack id.
   */
  private addUnknownUsers(): void {
    const known = new Set(this.users.map((user) => user.id));
    const { source } = this.options;
    const unknown = new Set<string>();
    const names = new Set<string>();
    for (const file of ['channels.json', 'groups.json', 'mpims.json', 'dms.json']) {
      for (const conversation of readOptional<{ name?: string; members?: string[] }>(source, file)) {
        for (const id of conversation.members ?? []) if (!known.has(id)) unknown.add(id);
        if (file !== 'dms.json' && conversation.name) names.add(conversation.name);
      }
    }
    // Senders too, in channels and group DMs (Zulip's fetch_shared_channel_users).
    for (const file of source.files()) {
      const slash = file.indexOf('/');
      if (slash < 0 || !names.has(file.slice(0, slash)) || !file.endsWith('.json')) continue;
      for (const message of readJson<SlackMessage[]>(source, file)) {
        const sender = messageSender(message);
        if (sender !== undefined && sender !== 'U00' && !known.has(sender)) unknown.add(sender);
      }
    }
    for (const user of this.users) user.is_mirror_dummy ??= false;
    for (const id of unknown) {
      this.warnings.push(`Slack user ${id} is not in the user list: imported as a deactivated shared-channel user`);
      this.users.push({ id, name: id, is_mirror_dummy: true, team_domain: 'unknown', profile: {} });
    }
  }

  private email(user: SlackUser): string {
    if (user.profile.email) return user.profile.email;
    if (user.is_mirror_dummy) return `${user.name}@${user.team_domain}.slack.com`;
    if (user.profile.bot_id) return this.botEmail(user.profile);
    if (slackUserFullName(user).toLowerCase() === 'slackbot') return `imported-slackbot-bot@${this.domain}`;
    throw new SlackImportError(`Could not find email address for Slack user ${user.id} (${user.name})`);
  }

  /** Zulip's SlackBotEmail: "<name>-bot@domain", numbered when taken, one per bot id. */
  private botEmail(profile: SlackUser['profile']): string {
    const botId = profile.bot_id!;
    const assigned = this.botEmails.get(botId);
    if (assigned) return assigned;
    const name = profile.real_name_normalized ?? profile.first_name;
    if (name === undefined) throw new SlackImportError('Could not identify bot type');
    const local = `${name.replaceAll('Bot', '').replaceAll(' ', '').toLowerCase()}-bot`;
    let email = `${local}@${this.domain}`;
    const count = (this.botEmailCounts.get(email) ?? 0) + 1;
    this.botEmailCounts.set(email, count);
    if (count > 1) email = `${local}-${count}@${this.domain}`;
    this.botEmails.set(botId, email);
    return email;
  }

  private role(user: SlackUser): number {
    let role: number = Role.MEMBER;
    if (user.is_owner || user.is_primary_owner) role = Role.OWNER;
    else if (user.is_admin) role = Role.ADMINISTRATOR;
    if (user.is_restricted || user.is_ultra_restricted) role = Role.GUEST;
    return role;
  }

  private convertUsers(): void {
    // Custom profile fields come from the export's users.json (the API's list lacks them).
    const exportUsers = readOptional<SlackUser>(this.options.source, 'users.json');
    const customFields = new Map<string, Map<string, string>>();
    for (const user of exportUsers) {
      const fields = new Map<string, string>();
      for (const [key, field] of Object.entries(user.profile?.fields ?? {})) fields.set(key, field?.value ?? '');
      for (const key of ['phone', 'skype'] as const) {
        if (key in (user.profile ?? {})) fields.set(key, user.profile[key] ?? '');
      }
      customFields.set(user.id, fields);
    }
    const fieldIds = new Map<string, number>();
    const fieldRows = this.rows('custom_profile_field');
    const valueRows = this.rows('custom_profile_field_value');

    // The primary owner is the first user (Zulip gives them id 0; here 1).
    const primaryOwnerId = 1;
    let nextUserId = 2;
    const found = new Map<string, number>();
    for (const user of this.users) {
      const userId = user.is_primary_owner ? primaryOwnerId : nextUserId;
      const email = this.email(user).toLowerCase();
      const same = found.get(email);
      if (same !== undefined) {
        // Shared-channel users with one address are one user.
        this.userIds.set(user.id, same);
        continue;
      }
      found.set(email, userId);
      this.avatar(user, userId);
      const timezone = user.tz && user.tz.includes('/') ? user.tz : DEFAULT_TIMEZONE;
      const isBot = user.is_bot ?? false;
      this.rows('user_profile').push({
        id: userId,
        realm_id: REALM_ID,
        email,
        delivery_email: email,
        full_name: slackUserFullName(user),
        role: this.role(user),
        is_active: !(user.deleted ?? false) && !user.is_mirror_dummy,
        is_bot: isBot,
        bot_type: isBot ? 1 : null,
        bot_owner_id: null,
        // No password: imported users set one through the password reset.
        date_joined: this.now.toISOString(),
        timezone,
        avatar_source: 'G',
      });
      this.userIds.set(user.id, userId);
      if (!user.is_primary_owner) nextUserId++;

      const fields = customFields.get(user.id);
      if (!fields) continue;
      for (const key of fields.keys()) {
        if (fieldIds.has(key)) continue;
        const id = fieldRows.length + 1;
        fieldIds.set(key, id);
        fieldRows.push({
          id,
          realm_id: REALM_ID,
          name: key === 'phone' || key === 'skype' ? key : `Slack custom field ${id}`,
          field_type: 1,
          order: id,
        });
      }
      for (const [key, value] of fields) {
        if (value === '') continue;
        valueRows.push({
          id: valueRows.length + 1,
          user_profile_id: userId,
          field_id: fieldIds.get(key),
          value,
          rendered_value: null,
        });
      }
    }
    // Long values make a field long text (Zulip's process_customprofilefields).
    for (const field of fieldRows) {
      if (valueRows.some((value) => value.field_id === field.id && (value.value as string).length > 50)) {
        field.field_type = 2;
      }
    }
    // Zulip's validate_user_emails_for_import: every address checked before anything is imported.
    const invalid = [...found.keys()].filter((email) => !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email));
    if (invalid.length) {
      throw new SlackImportError(
        `Invalid email format, please fix the following email(s) and try again: ${invalid.join(', ')}`,
      );
    }
    // Rows in primary-key order (the primary owner may come later in Slack's list).
    this.rows('user_profile').sort((a, b) => (a.id as number) - (b.id as number));
  }

  /** Zulip's build_avatar_url: Slack's image of the user (fetched by Zulip; listed here). */
  private avatar(user: SlackUser, userId: number): void {
    let url: string | null = null;
    if (user.profile.avatar_hash) {
      url = `https://ca.slack-edge.com/${user.team_id}-${user.id}-${user.profile.avatar_hash}-512`;
    } else if (user.is_integration_bot && user.profile.image_72 && imageTypeOf(user.profile.image_72)) {
      url = user.profile.image_72;
    }
    if (url) this.remoteFiles.push({ url, key: `avatar:${userId}`, kind: 'avatar' });
  }

  private systemGroups(): void {
    const groups = this.rows('user_group');
    const ids = new Map<SystemGroupName, number>();
    for (const group of SYSTEM_GROUPS) {
      const id = groups.length + 1;
      ids.set(group.name, id);
      groups.push({
        id,
        realm_id: REALM_ID,
        name: group.name,
        description: group.description,
        named: true,
        is_system_group: true,
        date_created: this.now.toISOString(),
      });
    }
    for (const group of SYSTEM_GROUPS) {
      if (group.subgroup) {
        this.rows('group_group_membership').push({
          supergroup_id: ids.get(group.name),
          subgroup_id: ids.get(group.subgroup),
        });
      }
    }
    for (const user of this.rows('user_profile')) {
      for (const name of directSystemGroupsForRole(user.role as number, true)) {
        this.rows('user_group_membership').push({ user_group_id: ids.get(name), user_profile_id: user.id });
      }
    }
    this.rows('user_group_membership').sort(
      (a, b) =>
        (a.user_group_id as number) - (b.user_group_id as number) ||
        (a.user_profile_id as number) - (b.user_profile_id as number),
    );
    const settings = this.rows('group_setting');
    const setting = (ownerKind: string, ownerId: number, name: string, group: SystemGroupName) =>
      settings.push({
        id: settings.length + 1,
        realm_id: REALM_ID,
        owner_kind: ownerKind,
        owner_id: ownerId,
        name,
        group_id: ids.get(group),
      });
    for (const [name, group] of Object.entries(REALM_GROUP_SETTING_DEFAULTS)) setting('realm', REALM_ID, name, group);
    for (const group of SYSTEM_GROUPS) {
      for (const name of Object.keys(USER_GROUP_PERMISSION_SETTINGS)) {
        setting('user_group', ids.get(group.name)!, name, SystemGroup.NOBODY);
      }
    }
    this.streamSetting = (streamId) => {
      // Channels from Slack have no creator here: "creator" settings go to nobody, as Zulip's import.
      for (const [name, holder] of Object.entries(STREAM_GROUP_SETTING_DEFAULTS)) {
        setting('stream', streamId, name, holder === 'creator' ? SystemGroup.NOBODY : holder);
      }
    };
  }

  private streamSetting: (streamId: number) => void = () => undefined;

  private mapMembers(members: string[]): number[] {
    return [...new Set(members.map((id) => this.userIds.get(id)!))];
  }

  private convertChannels(): void {
    const { source } = this.options;
    const add = (channels: SlackChannel[], inviteOnly: boolean) => {
      for (const channel of channels) {
        const streamId = this.rows('stream').length + 1;
        const archived = channel.is_archived ?? false;
        const description = (channel.purpose?.value ?? '').replaceAll('\n', ' ');
        this.rows('stream').push({
          id: streamId,
          realm_id: REALM_ID,
          name: channel.name,
          description,
          rendered_description: renderMarkdown(description),
          invite_only: inviteOnly,
          history_public_to_subscribers: !inviteOnly,
          is_archived: archived,
          // Zulip makes #general and #random default channels.
          is_default: (channel.name === 'general' || channel.name === 'random') && !archived,
          date_created: iso(Number(channel.created)),
          creator_id: null,
        });
        this.streamSetting(streamId);
        const members = this.mapMembers(channel.members);
        for (const userId of members) {
          const id = this.nextId.subscription++;
          this.rows('subscription').push({
            id,
            user_profile_id: userId,
            stream_id: streamId,
            active: true,
            color: STREAM_COLORS[(id - 1) % STREAM_COLORS.length],
            date_subscribed: this.now.toISOString(),
          });
        }
        const recipients = [...members].sort((x, y) => x - y);
        this.channels.set(channel.name, { slackId: channel.id, streamId, recipients });
      }
    };
    add(readJson<SlackChannel[]>(source, 'channels.json'), false);
    add(readOptional<SlackChannel>(source, 'groups.json'), true);
    for (const mpim of readOptional<SlackChannel>(source, 'mpims.json')) {
      this.mpims.set(
        mpim.name,
        this.mapMembers(mpim.members).sort((x, y) => x - y),
      );
    }
    for (const dm of readOptional<{ id: string; members: string[] }>(source, 'dms.json')) {
      this.dms.set(dm.id, [dm.members[0], dm.members[1] ?? dm.members[0]]);
    }
  }

  /** Zulip's build_realmemoji: only emoji.slack-edge.com images (aliases and others are left out). */
  private convertEmoji(): void {
    for (const [name, url] of Object.entries(this.options.customEmoji ?? {})) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        continue;
      }
      if (parsed.hostname !== 'emoji.slack-edge.com') continue;
      const type = imageTypeOf(parsed.pathname.split('/').pop() ?? '');
      if (!type) {
        this.warnings.push(`custom emoji ${name}: not an image type Zulip takes (${url})`);
        continue;
      }
      const id = this.rows('realm_emoji').length + 1;
      this.rows('realm_emoji').push({
        id,
        realm_id: REALM_ID,
        author_id: null,
        name,
        file_name: `${id}.${IMAGE_TYPES[type]}`,
        is_animated: false,
        deactivated: false,
      });
      this.realmEmojiIds.set(name, id);
      this.remoteFiles.push({ url, key: `emoji:${id}`, kind: 'emoji' });
    }
  }

  private buildMarkdownData(): void {
    const usersById = new Map<number, MentionableUser>();
    const usersByName = new Map<string, MentionableUser>();
    for (const row of this.rows('user_profile')) {
      const user = { id: row.id as number, full_name: row.full_name as string, is_bot: row.is_bot as boolean };
      usersById.set(user.id, user);
      if (row.is_active) usersByName.set(user.full_name.toLowerCase(), user);
    }
    const channelsByName = new Map(
      this.rows('stream').map((row) => [
        (row.name as string).toLowerCase(),
        { id: row.id as number, name: row.name as string },
      ]),
    );
    this.markdownData = {
      usersById,
      usersByName,
      groupsByName: new Map(),
      channelsByName,
      linkifiers: [],
      realmHost: this.options.host.toLowerCase(),
    };
  }

  /** Every conversation's messages, day by day, each day's in time order (get_messages_iterator). */
  private *messages(): Generator<SlackMessage> {
    const { source } = this.options;
    const dirs = [
      ...[...this.channels.keys()].map((name) => ({ dir: name, tag: { channel_name: name } })),
      ...[...this.mpims.keys()].map((name) => ({ dir: name, tag: { mpim_name: name } })),
      ...[...this.dms.keys()].map((id) => ({ dir: id, tag: { pm_name: id } })),
    ];
    const byDay = new Map<string, typeof dirs>();
    const files = source.files();
    for (const entry of dirs) {
      for (const file of files) {
        if (!file.startsWith(`${entry.dir}/`) || !file.endsWith('.json')) continue;
        const day = file.slice(entry.dir.length + 1);
        if (day.includes('/')) continue;
        byDay.set(day, [...(byDay.get(day) ?? []), entry]);
      }
    }
    for (const day of [...byDay.keys()].sort()) {
      const messages: SlackMessage[] = [];
      for (const entry of byDay.get(day)!) {
        for (const message of readJson<SlackMessage[]>(source, `${entry.dir}/${day}`)) {
          // The "U00" user shows up in some channel-rename messages; Slack "Posts" are HTML.
          if (message.user === 'U00') continue;
          if (message.mimetype === 'application/vnd.slack-docs') continue;
          messages.push({ ...message, ...entry.tag });
        }
      }
      messages.sort((a, b) => Number(a.ts) - Number(b.ts));
      yield* messages;
    }
  }

  private convertMessages(): void {
    const context: MarkdownContext = {
      users: this.users,
      channelIds: new Map([...this.channels].map(([name, channel]) => [name, channel.slackId])),
      userIds: this.userIds,
    };
    const threadTopics = new Map<string, string>();
    const threadCounts = new Map<string, number>();
    const convertThreads = this.options.convertThreads ?? true;
    for (const message of this.messages()) {
      const slackSender = messageSender(message);
      if (!slackSender) continue;
      if (message.subtype && SKIPPED_SUBTYPES.has(message.subtype)) continue;
      const senderId = this.userIds.get(slackSender);
      if (senderId === undefined) {
        this.warnings.push(`message ${message.ts}: sender ${slackSender} is not a known user; left out`);
        continue;
      }
      if (typeof message.text !== 'string') {
        this.warnings.push(`message ${message.ts}: no text; left out`);
        continue;
      }
      const converted = convertToZulipMarkdown(message.text, context);
      let content = converted.content;
      let streamId: number | null = null;
      let participants: number[];
      let isPrivate = false;
      if (message.channel_name !== undefined) {
        const channel = this.channels.get(message.channel_name)!;
        streamId = channel.streamId;
        participants = channel.recipients;
      } else if (message.mpim_name !== undefined) {
        isPrivate = true;
        participants = this.mpims.get(message.mpim_name)!;
      } else {
        isPrivate = true;
        const [a, b] = this.dms.get(message.pm_name!)!;
        participants = this.mapMembers([a, b, slackSender]).sort((x, y) => x - y);
      }
      const messageId = this.nextId.message++;
      if (message.reactions) this.reactions(message.reactions, messageId);
      if (message.subtype && ME_SUBTYPES.has(message.subtype)) content = `/me ${content}`;
      // A file comment names its author in a subfield.
      const fileUser = message.subtype === 'file_comment' && message.comment ? message.comment.user : message.user;
      const files = this.files(message, fileUser, senderId, messageId);
      content = [content, files.content].filter((part) => part !== '').join('\n');

      let topic = 'imported from Slack';
      if (convertThreads && !isPrivate && message.thread_ts !== undefined) {
        const start = new Date(Number(message.thread_ts) * 1000);
        const key = start.toISOString().slice(0, 19);
        topic = threadTopics.get(key) ?? '';
        if (!topic) {
          const date = key.slice(0, 10);
          const count = (threadCounts.get(date) ?? 0) + 1;
          threadCounts.set(date, count);
          topic = `${date} Slack thread ${count}`;
          threadTopics.set(key, topic);
        }
      }
      if (isPrivate) topic = '';
      content = truncateText(content.replaceAll('\0', ''), MAX_MESSAGE_LENGTH, '\n[message truncated]');
      const rendered = renderMessageMarkdown(content, this.markdownData);
      this.rows('message').push({
        id: messageId,
        realm_id: REALM_ID,
        sender_id: senderId,
        stream_id: streamId,
        topic,
        dm_key: isPrivate ? dmKey([senderId, ...participants]) : null,
        content,
        rendered_content: rendered.html,
        rendered_content_version: 1,
        date_sent: iso(Number(message.ts)),
        has_attachment: files.hasAttachment,
        has_image: files.hasImage,
        has_link: converted.hasLink || files.hasLink,
        sending_client: 'Slack import',
      });
      this.recipients.push({ messageId, userIds: participants, mentioned: converted.mentionedUserIds, isPrivate });
      this.userMessageCount += participants.length;
    }
  }

  /** Zulip's build_reactions: skin tones merged into the base emoji, Slack's names as Zulip's. */
  private reactions(reactions: { name: string; users: string[] }[], messageId: number): void {
    const merged = new Map<string, Set<string>>();
    for (const reaction of reactions) {
      const name = reaction.name.split('::')[0];
      const users = merged.get(name) ?? new Set();
      for (const user of reaction.users) users.add(user);
      merged.set(name, users);
    }
    const codeToNames = unicodeEmojiCodeToNames();
    for (const [slackName, users] of merged) {
      let emojiName: string;
      let emojiCode: string;
      let reactionType: string;
      const code = slackEmojiCode(slackName);
      if (code !== undefined) {
        const names = codeToNames.get(code);
        if (!names) {
          this.warnings.push(`reaction :${slackName}: is in iamcal's emoji data but not Zulip's; left out`);
          continue;
        }
        emojiName = names[0];
        emojiCode = code;
        reactionType = 'unicode_emoji';
      } else if (this.realmEmojiIds.has(slackName)) {
        emojiName = slackName;
        emojiCode = String(this.realmEmojiIds.get(slackName));
        reactionType = 'realm_emoji';
      } else {
        this.warnings.push(`reaction :${slackName}: is not a known emoji; left out`);
        continue;
      }
      const seen = new Set<number>();
      for (const slackUser of users) {
        const userId = this.userIds.get(slackUser);
        // Deleted users still appear in reactions without a profile.
        if (userId === undefined || seen.has(userId)) continue;
        seen.add(userId);
        this.rows('reaction').push({
          id: this.nextId.reaction++,
          message_id: messageId,
          user_profile_id: userId,
          emoji_name: emojiName,
          emoji_code: emojiCode,
          reaction_type: reactionType,
        });
      }
    }
  }

  /** Zulip's process_message_files: Slack-hosted files become uploads, others links. */
  private files(
    message: SlackMessage,
    fileUser: string | undefined,
    senderId: number,
    messageId: number,
  ): { content: string; hasAttachment: boolean; hasImage: boolean; hasLink: boolean } {
    const files = message.subtype === 'file_share' && message.file ? [message.file] : (message.files ?? []);
    const links: string[] = [];
    let hasAttachment = false;
    let hasImage = false;
    let hasLink = false;
    for (const file of files) {
      if (file.mode === 'tombstone' || file.mode === 'hidden_by_limit') continue;
      if (file.file_access === 'access_denied' || file.file_access === 'file_not_found') continue;
      let host: string;
      try {
        host = new URL(file.url_private).hostname;
      } catch {
        host = '';
      }
      if (host === 'files.slack.com') {
        hasAttachment = true;
        hasLink = true;
        hasImage = (file.mimetype ?? '').includes('image');
        if (fileUser === undefined || !this.userIds.has(fileUser)) {
          this.warnings.push(`message ${message.ts}: file ${file.name} has no known uploader`);
        }
        const pathId = [
          REALM_ID,
          crypto.randomInt(0, 256).toString(16),
          crypto.randomBytes(18).toString('base64url'),
          sanitizeName(file.name),
        ].join('/');
        links.push(`[${file.title}](/user_uploads/${pathId})`);
        const attachmentId = this.nextId.attachment++;
        this.rows('attachment').push({
          id: attachmentId,
          realm_id: REALM_ID,
          owner_id: senderId,
          path_id: pathId,
          file_name: file.name,
          size: file.size ?? 0,
          content_type: file.mimetype ?? null,
          create_time: iso(Number(file.created ?? message.ts)),
        });
        this.rows('attachment_message').push({ attachment_id: attachmentId, message_id: messageId });
        this.remoteFiles.push({
          url: file.url_private,
          key: pathId,
          kind: 'upload',
          slackFileId: file.id,
          name: file.name,
        });
      } else {
        hasLink = true;
        links.push(`[${file.title ?? file.name}](${file.url_private})`);
      }
    }
    return { content: links.join('\n'), hasAttachment, hasImage, hasLink };
  }
}

/** Converts a Slack export (see the top of this file). */
export function convertSlackExport(options: ConvertSlackOptions): SlackConversion {
  return new Converter(options).run();
}

/**
 * The user_message rows: every recipient has the message read (as Zulip's import marks them),
 * mentioned users flagged, direct messages flagged private.
 */
export function* userMessageRows(conversion: SlackConversion): Generator<Row> {
  let id = 1;
  for (const { messageId, userIds, mentioned, isPrivate } of conversion.recipients) {
    for (const userId of userIds) {
      let flags: number = MessageFlag.read;
      if (mentioned.includes(userId)) flags |= MessageFlag.mentioned;
      if (isPrivate) flags |= MessageFlag.is_private;
      yield { id: id++, user_profile_id: userId, message_id: messageId, flags };
    }
  }
}

/**
 * The archive's lines (docs/export-format.md), for importRealm. Uploads come last, in the
 * files section: their bytes when `fileBytes` has them (from the export or fetched), otherwise
 * marked missing.
 */
export function* conversionLines(
  conversion: SlackConversion,
  fileBytes: (file: RemoteFile) => Buffer | null = () => null,
): Generator<string> {
  const tables = [...conversion.tables.keys()];
  yield `${JSON.stringify({
    format: EXPORT_FORMAT,
    version: EXPORT_FORMAT_VERSION,
    realm_id: REALM_ID,
    export_id: null,
    export_type: 0,
    exported_at: new Date().toISOString(),
    source: 'slack',
    consenting_user_ids: [],
    tables,
  })}\n`;
  for (const table of tables) {
    if (table === 'user_message') {
      yield `${JSON.stringify({ table, rows: conversion.userMessageCount })}\n`;
      for (const row of userMessageRows(conversion)) yield `${JSON.stringify(row)}\n`;
      continue;
    }
    const rows = conversion.tables.get(table)!;
    yield `${JSON.stringify({ table, rows: rows.length })}\n`;
    for (const row of rows) yield `${JSON.stringify(row)}\n`;
  }
  const uploads = conversion.remoteFiles.filter((file) => file.kind === 'upload');
  if (!uploads.length) return;
  yield `${JSON.stringify({ section: 'files', files: uploads.length })}\n`;
  for (const file of uploads) {
    const bytes = fileBytes(file);
    if (!bytes) {
      yield `${JSON.stringify({ file: file.key, missing: true })}\n`;
      continue;
    }
    yield `${JSON.stringify({ file: file.key, size: bytes.length })}\n`;
    for (let at = 0; at < bytes.length; at += 768 * 1024) {
      yield `${JSON.stringify(bytes.subarray(at, at + 768 * 1024).toString('base64'))}\n`;
    }
    yield `${JSON.stringify({ end: file.key })}\n`;
  }
}
