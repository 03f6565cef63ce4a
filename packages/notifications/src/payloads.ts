// The payloads of push notifications, as Zulip 10's zerver/lib/push_notifications.py builds
// them for the bouncer (get_message_payload_apns / _gcm, get_remove_payload_*, the test
// notification's base payload). The mobile apps parse them: zulip-flutter's
// lib/api/notifications.dart (MessageLegacyFcmMessage, RemoveLegacyFcmMessage) reads the FCM
// data, which reaches the phone with every value as a string (fcmData below does what FCM does).

import type { Message, Realm, Stream, UserProfile } from '@teamchat/db';
import { avatarUrl, realmUrl } from '@teamchat/domain';
import { NotificationTrigger, type NotificationTriggerName } from './triggers';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface PayloadContext {
  realm: Pick<Realm, 'id' | 'host' | 'name'>;
  /** EXTERNAL_SCHEME */
  scheme: string;
  /** EXTERNAL_HOST: the server's host (Zulip's settings.EXTERNAL_HOST); the realm's host here. */
  user: Pick<UserProfile, 'id'>;
}

export type PayloadSender = Pick<
  UserProfile,
  'id' | 'email' | 'full_name' | 'avatar_source' | 'avatar_key' | 'delivery_email' | 'avatar_version' | 'realm_id'
>;

export interface PayloadMessage {
  message: Pick<Message, 'id' | 'stream_id' | 'topic' | 'dm_key' | 'rendered_content' | 'content' | 'date_sent'>;
  sender: PayloadSender;
  stream: Pick<Stream, 'id' | 'name'> | null;
  /** Group direct messages: every participant's name and id (sender included). */
  participants: { id: number; full_name: string }[];
  trigger: NotificationTriggerName;
  /** A mention through a user group (mentionedUserGroup), not a personal one. */
  mentionedUserGroup?: { id: number; name: string } | null;
}

/** Zulip's get_base_payload: which server, organisation and user a notification is for. */
export function basePayload(context: PayloadContext): JsonObject {
  const url = realmUrl(context.realm, context.scheme);
  return {
    server: context.realm.host,
    realm_id: context.realm.id,
    realm_uri: url,
    realm_url: url,
    realm_name: context.realm.name,
    user_id: context.user.id,
  };
}

function absoluteUrl(url: string, base: string): string {
  return new URL(url, base).toString();
}

/** Zulip's get_message_payload: the fields of `message` payloads on every platform. */
function messagePayload(context: PayloadContext, data: PayloadMessage): JsonObject {
  const payload: JsonObject = {
    ...basePayload(context),
    sender_id: data.sender.id,
    sender_email: data.sender.email,
    time: Math.floor(data.message.date_sent.getTime() / 1000),
  };
  if (data.mentionedUserGroup) {
    payload.mentioned_user_group_id = data.mentionedUserGroup.id;
    payload.mentioned_user_group_name = data.mentionedUserGroup.name;
  }
  if (data.stream !== null) {
    payload.recipient_type = 'stream';
    payload.stream = data.stream.name;
    payload.stream_id = data.stream.id;
    payload.topic = data.message.topic;
  } else {
    payload.recipient_type = 'private';
    // 1:1 conversations have no pm_users: the app knows them by sender and user.
    if (data.participants.length > 2) {
      payload.pm_users = data.participants
        .map((user) => user.id)
        .sort((a, b) => a - b)
        .join(',');
    }
  }
  return payload;
}

/** Zulip's truncate_content: 200 characters, then an ellipsis. */
export function truncateContent(content: string): [string, boolean] {
  const chars = [...content];
  if (chars.length <= 200) return [content, false];
  return [chars.slice(0, 200).join('') + '…', true];
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+\d*);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X')) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith('#') && name !== '#39') return String.fromCodePoint(Number(name.slice(1)));
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const KATEX_OPEN = '<span class="katex">';
const TEX_SOURCE = /<annotation encoding="application\/x-tex">([^<]*)<\/annotation>/;

/**
 * Each KaTeX rendering (packages/domain/src/tex.ts) as the TeX it came from, between $$, as
 * Zulip's change_katex_to_raw_latex (zerver/lib/tex.py): its MathML and HTML would read as
 * the formula twice, garbled.
 */
function katexToRawTex(html: string): string {
  let out = '';
  let from = 0;
  for (let start = html.indexOf(KATEX_OPEN); start !== -1; start = html.indexOf(KATEX_OPEN, from)) {
    // KaTeX's output is spans (and MathML, SVG) inside that span: its end is the </span> that balances it.
    const spans = /<span[\s>]|<\/span>/g;
    spans.lastIndex = start + KATEX_OPEN.length;
    let depth = 1;
    let end = -1;
    for (let match = spans.exec(html); match; match = spans.exec(html)) {
      depth += match[0] === '</span>' ? -1 : 1;
      if (depth === 0) {
        end = match.index + match[0].length;
        break;
      }
    }
    if (end === -1) break;
    const tex = TEX_SOURCE.exec(html.slice(start, end));
    out += html.slice(from, start) + (tex ? `$$${tex[1]}$$` : '');
    from = end;
  }
  return out + html.slice(from);
}

/**
 * Zulip's get_mobile_push_content: the rendered message as plain text (emoji as characters,
 * images by their alt text, math as its TeX, quotes as "> " lines, list items numbered).
 */
export function mobilePushContent(renderedHtml: string): string {
  let html = katexToRawTex(renderedHtml);
  // Unicode emoji spans carry their code points in the class: emoji-1f44d or emoji-1f468-200d-1f4bb.
  html = html.replace(
    /<span[^>]*class="[^"]*\bemoji-([0-9a-f-]+)\b[^"]*"[^>]*>[^<]*<\/span>/gi,
    (_whole, code: string) =>
      code
        .split('-')
        .map((hex) => String.fromCodePoint(parseInt(hex, 16)))
        .join(''),
  );
  html = html.replace(/<img[^>]*\balt="([^"]*)"[^>]*>/gi, '$1');
  html = html.replace(/<blockquote>([\s\S]*?)<\/blockquote>/gi, (_whole, inner: string) => {
    const text = stripTags(inner);
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => `> ${line}\n`)
      .join('');
  });
  html = html.replace(
    /<ol(?:\s+start="(\d+)")?[^>]*>([\s\S]*?)<\/ol>/gi,
    (_whole, start: string | undefined, inner: string) => {
      const first = start ? Number(start) : 1;
      return [...inner.matchAll(/<li>([\s\S]*?)<\/li>/gi)]
        .map((item, i) => `${first + i}. ${stripTags(item[1]).trim()}`)
        .join('\n');
    },
  );
  return stripTags(html);
}

function stripTags(html: string): string {
  return decodeEntities(html.replace(/<br\s*\/?>/gi, '\n').replace(/<[^>]+>/g, ''));
}

/** Zulip's get_apns_alert_title. */
function apnsAlertTitle(data: PayloadMessage): string {
  if (data.stream !== null) return `#${data.stream.name} > ${data.message.topic}`;
  if (data.participants.length > 2) {
    return data.participants
      .map((user) => user.full_name)
      .sort()
      .join(', ');
  }
  return data.sender.full_name;
}

/** Zulip's get_apns_alert_subtitle. */
function apnsAlertSubtitle(data: PayloadMessage): string {
  const name = data.sender.full_name;
  if (data.trigger === NotificationTrigger.MENTION) {
    return data.mentionedUserGroup ? `${name} mentioned @${data.mentionedUserGroup.name}:` : `${name} mentioned you:`;
  }
  if (
    data.trigger === NotificationTrigger.TOPIC_WILDCARD_MENTION ||
    data.trigger === NotificationTrigger.STREAM_WILDCARD_MENTION ||
    data.trigger === NotificationTrigger.TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC ||
    data.trigger === NotificationTrigger.STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC
  ) {
    return `${name} mentioned everyone:`;
  }
  if (data.stream === null && data.participants.length <= 2) return '';
  return `${name}:`;
}

function pushContent(data: PayloadMessage): [string, boolean] {
  return truncateContent(mobilePushContent(data.message.rendered_content ?? data.message.content));
}

/** Zulip's get_message_payload_apns. */
export function messagePayloadApns(context: PayloadContext, data: PayloadMessage): JsonObject {
  const [content] = pushContent(data);
  return {
    alert: { title: apnsAlertTitle(data), subtitle: apnsAlertSubtitle(data), body: content },
    sound: 'default',
    // Zulip sends 0 for now (get_apns_badge_count).
    badge: 0,
    custom: { zulip: { ...messagePayload(context, data), message_ids: [data.message.id] } },
  };
}

/** Zulip's get_message_payload_gcm: the payload and the FCM options. */
export function messagePayloadGcm(context: PayloadContext, data: PayloadMessage): [JsonObject, JsonObject] {
  const [content, truncated] = pushContent(data);
  const base = realmUrl(context.realm, context.scheme);
  return [
    {
      ...messagePayload(context, data),
      event: 'message',
      zulip_message_id: data.message.id,
      content,
      content_truncated: truncated,
      sender_full_name: data.sender.full_name,
      sender_avatar_url: absoluteUrl(avatarUrl(data.sender), base),
    },
    { priority: 'high' },
  ];
}

/** Zulip's get_remove_payload_gcm. */
export function removePayloadGcm(context: PayloadContext, messageIds: number[]): [JsonObject, JsonObject] {
  return [
    {
      ...basePayload(context),
      event: 'remove',
      zulip_message_ids: messageIds.join(','),
      // Clients older than 2019 read only the first one.
      zulip_message_id: messageIds[0],
    },
    { priority: 'normal' },
  ];
}

/** Zulip's get_remove_payload_apns. */
export function removePayloadApns(context: PayloadContext, messageIds: number[]): JsonObject {
  return {
    badge: 0,
    custom: { zulip: { ...basePayload(context), event: 'remove', zulip_message_ids: messageIds.join(',') } },
  };
}

/** Zulip's handle_remove_push_notification keeps the newest 200 ids (APNs' 4 KB limit). */
export const MAX_REMOVED_MESSAGE_IDS = 200;

/** What FCM hands the app: every data value a string (Python's str() of the value, as the bouncer sends it). */
export function fcmData(payload: JsonObject): Record<string, string> {
  return Object.fromEntries(
    Object.entries(payload).map(([key, value]) => [
      key,
      typeof value === 'string'
        ? value
        : typeof value === 'boolean'
          ? value
            ? 'True'
            : 'False'
          : JSON.stringify(value),
    ]),
  );
}
