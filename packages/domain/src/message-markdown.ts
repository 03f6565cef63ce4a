// Zulip's message Markdown on top of the shared markdown-it renderer (markdown.ts): mentions
// (@**Name**, @**Name|id**, @_**Name**, wildcards, @*group*), channel and topic links
// (#**channel**, #**channel>topic**), the realm's linkifiers (re2 pattern → RFC 6570 url_template;
// linkifier-engine.ts), math (tex.ts), and Zulip's code-block markup. Output follows api_docs/message-formatting.md.
// Every URL rendered here passes sanitizeUrl (url-sanitizer.ts).
//
// Rendering is synchronous; what it needs from the database (users, groups, channels,
// linkifiers named in the message) is loaded first by loadMarkdownData, the way Zulip's
// MentionData is built before rendering.

import type MarkdownIt from 'markdown-it';
import { queryRows, type TxClient } from '@teamchat/db';
import { createMarkdownRenderer, linkTokens, pushReplacingText } from './markdown';
import { streamAccess, type Viewer } from './streams';
import { linkedUploadPathIds } from './attachments';
import { compileLinkifier, LinkifierBudget, linkifierMatches, type CompiledLinkifier } from './linkifier-engine';
import { escapeHtmlAttribute, escapeHtmlText } from './html';
import { sanitizeUrl } from './url-sanitizer';
import { globalTimeDatetime } from './global-times';
import { CODE_LANGUAGE_NAMES } from './code-languages';
import { highlightCode } from './code-highlight';
import { zulipMath } from './tex';
import { loadPreviewData, withThumbnails, zulipInlinePreviews, type PreviewData } from './inline-previews';
import { activeRealmEmojiByName, type RealmEmojiInfo } from './realm-emoji';
import {
  emoticonMatches,
  imageEmojiHtml,
  MAY_HOLD_EMOTICON,
  unicodeEmojiCode,
  unicodeEmojiHtml,
  unicodeEmojiMatches,
  ZULIP_EMOJI_SRC,
} from './unicode-emoji';

type StateCore = MarkdownIt.StateCore;
type StateInline = MarkdownIt.StateInline;
type Token = MarkdownIt.Token;

export const STREAM_WILDCARDS = ['all', 'everyone', 'stream', 'channel'];
export const TOPIC_WILDCARD = 'topic';

export interface MentionableUser {
  id: number;
  full_name: string;
  is_bot: boolean;
}

export interface MentionableGroup {
  id: number;
  name: string;
}

export interface LinkableChannel {
  id: number;
  name: string;
}

/** Everything a message's rendering looks up, loaded before rendering. */
export interface MarkdownData extends PreviewData {
  usersByName: Map<string, MentionableUser>;
  usersById: Map<number, MentionableUser>;
  groupsByName: Map<string, MentionableGroup>;
  channelsByName: Map<string, LinkableChannel>;
  linkifiers: CompiledLinkifier[];
  /** The realm's active custom emoji the message may name (:name:), by name. */
  realmEmoji?: Map<string, RealmEmojiInfo>;
  /** The sender's translate_emoticons setting: :) becomes an emoji. */
  translateEmoticons?: boolean;
  /** The organisation's host (as in its URL): links into it are made relative. */
  realmHost?: string;
  /** The realm's default_code_block_language: the language of fences that name none. */
  defaultCodeBlockLanguage?: string;
}

/** What rendering found: Zulip's MessageRenderingResult. */
export interface RenderingResult {
  html: string;
  mentionedUserIds: Set<number>;
  mentionedGroupIds: Set<number>;
  streamWildcard: boolean;
  topicWildcard: boolean;
  hasLink: boolean;
  hasImage: boolean;
  /** The linkifier budget ran out: the rest of the message was left without linkifier links. */
  linkifiersCutShort: boolean;
  /** Image uploads shown as placeholders: their thumbnails are not made yet (Zulip's thumbnail_spinners). */
  thumbnailSpinners?: string[];
}

const BEFORE_MENTION = /[\s'"(,:<]/;
const USER_MENTION = /^@(_?)\*\*([^*]+)\*\*/;
const GROUP_MENTION = /^@(_?)\*([^*]+)\*/;
const CHANNEL_LINK = /^#\*\*([^*>]+)\*\*/;
const TOPIC_LINK = /^#\*\*([^*>]+)>([^*]*)\*\*/;
const IMAGE_PATH = /\.(bmp|gif|jpe?g|png|tiff?|webp)$/i;
/** Zulip's EMOJI_REGEX, :[\w\-\+]+:. */
const EMOJI = /:([\p{L}\p{N}\p{M}_+-]+):/uy;
const EMOJI_ANYWHERE = /:([\p{L}\p{N}\p{M}_+-]+):/gu;

// ---------------------------------------------------------------- loading

const FENCE_WITHOUT_LANGUAGE = /^ *(?:`{3,}|~{3,}) *$/m;

function realmDefaultCodeBlockLanguage(settings: unknown): string | undefined {
  const value = (settings as Record<string, unknown> | null | undefined)?.realm_default_code_block_language;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Names and ids the content might mention (before knowing what is inside code). */
export function possibleMentions(content: string) {
  const userNames = new Set<string>();
  const userIds = new Set<number>();
  const groupNames = new Set<string>();
  const channelNames = new Set<string>();
  for (const match of content.matchAll(/@_?\*\*([^*]+)\*\*/g)) {
    const idSyntax = /^(.*)\|(\d+)$/.exec(match[1]);
    if (idSyntax) userIds.add(Number(idSyntax[2]));
    else userNames.add(match[1].toLowerCase());
  }
  for (const match of content.matchAll(/@_?\*([^*]+)\*/g)) groupNames.add(match[1].toLowerCase());
  for (const match of content.matchAll(/#\*\*([^*>]+)(?:>[^*]*)?\*\*/g)) channelNames.add(match[1].toLowerCase());
  return { userNames, userIds, groupNames, channelNames };
}

type MarkdownReader = Pick<
  TxClient,
  | 'userProfile'
  | 'userGroup'
  | 'stream'
  | '$queryRawUnsafe'
  | '$queryRaw'
  | 'subscription'
  | 'groupSetting'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | 'userMessage'
  | 'realmEmoji'
  | 'realm'
>;

/**
 * The realm's linkifiers, compiled, in their order. Every send and every message fetch reads
 * them: a named statement on the pool (see sqlPool in packages/db), not a Prisma query.
 */
export async function loadLinkifiers(
  db: Pick<TxClient, '$queryRawUnsafe'>,
  realmId: number,
): Promise<CompiledLinkifier[]> {
  const rows = await queryRows<{ pattern: string; url_template: string }>(
    db,
    'realm-linkifiers',
    'SELECT pattern, url_template FROM linkifier WHERE realm_id = $1 ORDER BY "order", id',
    [realmId],
  );
  return rows
    .map((row) => compileLinkifier(row.pattern, row.url_template))
    .filter((linkifier): linkifier is CompiledLinkifier => linkifier !== null);
}

/**
 * Loads what `content` may reference: active users by name or id, active named groups,
 * channels the sender can see, and the realm's linkifiers.
 */
export async function loadMarkdownData(db: MarkdownReader, sender: Viewer, content: string): Promise<MarkdownData> {
  const { userNames, userIds, groupNames, channelNames } = possibleMentions(content);
  const realmId = sender.realm_id;
  const [users, groups, channels, linkifiers] = await Promise.all([
    userNames.size || userIds.size
      ? db.userProfile.findMany({
          where: {
            realm_id: realmId,
            is_active: true,
            OR: [
              ...[...userNames].map((name) => ({ full_name: { equals: name, mode: 'insensitive' as const } })),
              ...(userIds.size ? [{ id: { in: [...userIds] } }] : []),
            ],
          },
          select: { id: true, full_name: true, is_bot: true },
          orderBy: { id: 'asc' },
        })
      : [],
    groupNames.size
      ? db.userGroup.findMany({
          where: {
            realm_id: realmId,
            named: true,
            deactivated: false,
            OR: [...groupNames].map((name) => ({ name: { equals: name, mode: 'insensitive' as const } })),
          },
          select: { id: true, name: true },
        })
      : [],
    channelNames.size
      ? db.stream.findMany({
          where: {
            realm_id: realmId,
            OR: [...channelNames].map((name) => ({ name: { equals: name, mode: 'insensitive' as const } })),
          },
        })
      : [],
    loadLinkifiers(db, realmId),
  ]);
  const emojiNames = [...new Set([...content.matchAll(EMOJI_ANYWHERE)].map((match) => match[1]))];
  const [realmEmoji, senderRow, realmRow, previewData] = await Promise.all([
    activeRealmEmojiByName(db, realmId, emojiNames),
    // The sender's setting matters only when the content may hold an emoticon.
    MAY_HOLD_EMOTICON.test(content)
      ? db.userProfile.findUnique({ where: { id: sender.id }, select: { settings: true } })
      : null,
    // The organisation's host matters only when the content may link into it, its default code
    // block language only when a fence names no language.
    /https?:\/\/[^\s/]+\/(#|user_uploads\/)/.test(content) || FENCE_WITHOUT_LANGUAGE.test(content)
      ? db.realm.findUnique({ where: { id: realmId }, select: { host: true, settings: true } })
      : null,
    loadPreviewData(db, realmId, content),
  ]);
  const senderSettings = senderRow?.settings as Record<string, unknown> | null | undefined;
  const visibleChannels: LinkableChannel[] = [];
  for (const channel of channels) {
    if ((await streamAccess(db, sender, channel)).metadata)
      visibleChannels.push({ id: channel.id, name: channel.name });
  }
  const usersByName = new Map<string, MentionableUser>();
  for (const user of users)
    if (!usersByName.has(user.full_name.toLowerCase())) usersByName.set(user.full_name.toLowerCase(), user);
  return {
    usersByName,
    usersById: new Map(users.map((user) => [user.id, user])),
    groupsByName: new Map(groups.map((group) => [group.name!.toLowerCase(), { id: group.id, name: group.name! }])),
    channelsByName: new Map(visibleChannels.map((channel) => [channel.name.toLowerCase(), channel])),
    linkifiers,
    realmEmoji,
    translateEmoticons: senderSettings?.translate_emoticons === true,
    realmHost: realmRow?.host,
    ...previewData,
    defaultCodeBlockLanguage: realmDefaultCodeBlockLanguage(realmRow?.settings),
  };
}

// ---------------------------------------------------------------- rendering

interface RenderEnv {
  data: MarkdownData;
  result: Omit<RenderingResult, 'html'>;
  linkifierBudget: LinkifierBudget;
}

/** Zulip's hash_util_encode for narrow URLs. */
function hashEncode(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/\./g, '%2E')
    .replace(/%/g, '.');
}

export function channelNarrowUrl(channel: LinkableChannel): string {
  return `/#narrow/channel/${channel.id}-${hashEncode(channel.name.replace(/ /g, '-'))}`;
}

function pushHtml(state: StateInline, html: string): void {
  const token = state.push('zulip_html', '', 0);
  token.content = html;
}

function precededByBoundary(state: StateInline): boolean {
  return state.pos === 0 || BEFORE_MENTION.test(state.src[state.pos - 1]);
}

function mentionRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x40 /* @ */ || !precededByBoundary(state)) return false;
  const env = state.env as RenderEnv;
  const rest = state.src.slice(state.pos);
  const userMatch = USER_MENTION.exec(rest);
  if (userMatch) {
    const isSilent = userMatch[1] === '_';
    const name = userMatch[2];
    let html: string | null = null;
    if (STREAM_WILDCARDS.includes(name)) {
      html = `<span class="user-mention channel-wildcard-mention${isSilent ? ' silent' : ''}" data-user-id="*">${isSilent ? '' : '@'}${escapeHtmlAttribute(name)}</span>`;
      if (!isSilent && !silent) env.result.streamWildcard = true;
    } else if (name === TOPIC_WILDCARD) {
      html = `<span class="topic-mention${isSilent ? ' silent' : ''}">${isSilent ? '' : '@'}${escapeHtmlAttribute(name)}</span>`;
      if (!isSilent && !silent) env.result.topicWildcard = true;
    } else {
      const idSyntax = /^(.+)?\|(\d+)$/.exec(name);
      let user: MentionableUser | undefined;
      if (idSyntax) {
        user = env.data.usersById.get(Number(idSyntax[2]));
        if (user && idSyntax[1] !== undefined && user.full_name !== idSyntax[1]) user = undefined;
      } else {
        user = env.data.usersByName.get(name.toLowerCase());
      }
      if (user) {
        html = `<span class="user-mention${isSilent ? ' silent' : ''}" data-user-id="${user.id}">${isSilent ? '' : '@'}${escapeHtmlAttribute(user.full_name)}</span>`;
        if (!isSilent && !silent) env.result.mentionedUserIds.add(user.id);
      }
    }
    if (html === null) return false;
    if (!silent) pushHtml(state, html);
    state.pos += userMatch[0].length;
    return true;
  }
  const groupMatch = GROUP_MENTION.exec(rest);
  if (groupMatch) {
    const isSilent = groupMatch[1] === '_';
    const group = env.data.groupsByName.get(groupMatch[2].toLowerCase());
    if (!group) return false;
    if (!silent) {
      pushHtml(
        state,
        `<span class="user-group-mention${isSilent ? ' silent' : ''}" data-user-group-id="${group.id}">${isSilent ? '' : '@'}${escapeHtmlAttribute(group.name)}</span>`,
      );
      if (!isSilent) env.result.mentionedGroupIds.add(group.id);
    }
    state.pos += groupMatch[0].length;
    return true;
  }
  return false;
}

function channelLinkRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x23 /* # */ || !precededByBoundary(state)) return false;
  const env = state.env as RenderEnv;
  const rest = state.src.slice(state.pos);
  const topicMatch = TOPIC_LINK.exec(rest);
  const match = topicMatch ?? CHANNEL_LINK.exec(rest);
  if (!match) return false;
  const channel = env.data.channelsByName.get(match[1].toLowerCase());
  if (!channel) return false;
  if (!silent) {
    const url = channelNarrowUrl(channel);
    if (topicMatch) {
      const topic = topicMatch[2];
      pushHtml(
        state,
        `<a class="stream-topic" data-stream-id="${channel.id}" href="${url}/topic/${hashEncode(topic)}">#${escapeHtmlAttribute(channel.name)} &gt; ${escapeHtmlAttribute(topic)}</a>`,
      );
    } else {
      pushHtml(
        state,
        `<a class="stream" data-stream-id="${channel.id}" href="${url}">#${escapeHtmlAttribute(channel.name)}</a>`,
      );
    }
  }
  state.pos += match[0].length;
  return true;
}

/**
 * :name: (Zulip's Emoji pattern): the realm's active custom emoji first, then :zulip:, then
 * Zulip's unicode names. An unknown :name: stays text and is consumed whole, as in Zulip, so
 * its closing colon cannot open another emoji.
 */
function emojiRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x3a /* : */) return false;
  const env = state.env as RenderEnv;
  EMOJI.lastIndex = state.pos;
  const match = EMOJI.exec(state.src);
  if (!match) return false;
  if (!silent) {
    const name = match[1];
    const custom = env.data.realmEmoji?.get(name);
    const code = custom || name === 'zulip' ? undefined : unicodeEmojiCode(name);
    if (custom) pushHtml(state, imageEmojiHtml(custom.source_url, name));
    else if (name === 'zulip') pushHtml(state, imageEmojiHtml(ZULIP_EMOJI_SRC, name));
    else if (code) pushHtml(state, unicodeEmojiHtml(code, name));
    else state.push('text', '', 0).content = match[0];
  }
  state.pos += match[0].length;
  return true;
}

/** Emoji typed as characters, and emoticons when the sender translates them, in text. */
function unicodeEmojiRule(state: StateCore): void {
  const env = state.env as RenderEnv;
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    let out: Token[] | null = null;
    for (const [position, token] of block.children.entries()) {
      const matches = token.type === 'text' ? unicodeEmojiMatches(token.content) : [];
      if (token.type === 'text' && env.data.translateEmoticons) {
        matches.push(...emoticonMatches(token.content));
        matches.sort((a, b) => a.index - b.index);
      }
      if (matches.length === 0) {
        out?.push(token);
        continue;
      }
      out ??= block.children.slice(0, position);
      pushReplacingText(
        state,
        token,
        matches,
        (match) => {
          const emoji = new state.Token('zulip_html', '', 0);
          emoji.content = match.html;
          return [emoji];
        },
        out,
      );
    }
    if (out) block.children = out;
  }
}

const GLOBAL_TIME = /<time:([^>]*?)>/y;

/** <time:…> as Zulip's <time datetime="…Z">, or its "Invalid time format" error. */
function globalTimeRule(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x3c /* < */) return false;
  GLOBAL_TIME.lastIndex = state.pos;
  const match = GLOBAL_TIME.exec(state.src);
  if (!match) return false;
  if (!silent) {
    const datetime = globalTimeDatetime(match[1]);
    pushHtml(
      state,
      datetime === null
        ? `<span class="timestamp-error">Invalid time format: ${escapeHtmlText(match[1])}</span>`
        : `<time datetime="${datetime}">${escapeHtmlText(match[1])}</time>`,
    );
  }
  state.pos += match[0].length;
  return true;
}

function linkifierRule(state: StateCore): void {
  const env = state.env as RenderEnv;
  if (env.data.linkifiers.length === 0) return;
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    let linkDepth = 0;
    for (const token of block.children) {
      if (token.type === 'link_open') linkDepth++;
      if (token.type === 'link_close') linkDepth--;
      if (token.type !== 'text' || linkDepth > 0) {
        out.push(token);
        continue;
      }
      const matches = linkifierMatches(token.content, env.data.linkifiers, env.linkifierBudget);
      pushReplacingText(
        state,
        token,
        matches.map((match) => ({ ...match, length: match.text.length })),
        (match) => linkTokens(state, match.url, match.text, 'linkifier'),
        out,
      );
    }
    block.children = out;
  }
}

/**
 * A link into the organisation's own app or uploads, made relative so that it opens in the same
 * window (Zulip's rewrite_local_links_to_relative): "https://host/#narrow/…" becomes "#narrow/…".
 */
function localLinkPath(href: string, host: string): string | null {
  for (const scheme of ['https://', 'http://']) {
    const prefix = `${scheme}${host}/`;
    if (href.startsWith(`${prefix}#`) || href.startsWith(`${prefix}user_uploads/`)) return href.slice(prefix.length);
  }
  return null;
}

/** Records links and images; a link whose text is empty or blank shows its URL, as in Zulip. */
function linkFacts(state: StateCore): void {
  const env = state.env as RenderEnv;
  const visit = (tokens: Token[]) => {
    for (const [position, token] of tokens.entries()) {
      if (token.type === 'link_open') {
        const href = token.attrGet('href') ?? '';
        const next = tokens[position + 1];
        const blank =
          next?.type === 'text' && next.content.trim() === '' && tokens[position + 2]?.type === 'link_close';
        if (href && (next?.type === 'link_close' || blank)) {
          const text = new state.Token('text', '', 0);
          text.content = href;
          tokens.splice(position + 1, blank ? 1 : 0, text);
        }
        env.result.hasLink = true;
        if (href.includes('/user_uploads/') && IMAGE_PATH.test(href.split(/[?#]/)[0])) env.result.hasImage = true;
        const local = env.data.realmHost ? localLinkPath(href, env.data.realmHost) : null;
        if (local !== null) token.attrSet('href', local);
      }
      if (token.type === 'image') {
        env.result.hasLink = true;
        env.result.hasImage = true;
      }
      if (token.children) visit(token.children);
    }
  };
  visit(state.tokens);
}

/** Zulip's CodeHilite._parseHeader: with no language, "#!lang", "#!/path/lang" or ":::lang" on the first line names one (the line stays). */
const SHEBANG = /^(?:::+|#!)(?:(?:\/\w+)*[/ ])?([\w#.+-]*)/;

/**
 * A code block as Zulip's format_code makes it: trailing spaces of each line dropped, highlighted
 * (code-highlight.ts), and with a language, named as Pygments' lexer for it (js → JavaScript) or
 * as written (lowercased), after a round trip through lxml, which leaves quotes unescaped in text.
 */
function codeBlock(content: string, language: string): string {
  const code = content.replace(/[ \t]+$/gm, '');
  if (!language) {
    const shebang = SHEBANG.exec(code.replace(/^\n+/, '').split('\n')[0]);
    return `${highlightCode(code, shebang ? shebang[1].toLowerCase() : null)}\n`;
  }
  const lang = language.toLowerCase();
  const pretty = Object.hasOwn(CODE_LANGUAGE_NAMES, lang) ? CODE_LANGUAGE_NAMES[lang] : lang;
  const html = highlightCode(code, lang)
    .replace('<div class="codehilite">', `<div class="codehilite" data-code-language="${escapeHtmlAttribute(pretty)}">`)
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
  return `${html}\n`;
}

/** Zulip's FENCE_RE after the fence: an optional {, an optional ., the language (its `+-.` is a range), then a header. */
const FENCE_INFO = /^ *\{?\.?([a-zA-Z0-9_+,\-./#]+)? *([^ ~`][^~`]*)?\}?$/;

/** The fence's language (lowercased, the realm's default when none), and the rest of the line. */
function fenceInfo(info: string, env: RenderEnv): { language: string; header: string } {
  const match = FENCE_INFO.exec(info);
  const language = (match?.[1] ?? '').toLowerCase() || (env.data.defaultCodeBlockLanguage ?? '').toLowerCase();
  return { language, header: (match?.[2] ?? '').trim() };
}

function zulipMessageSyntax(md: MarkdownIt): void {
  md.inline.ruler.before('emphasis', 'zulip_mention', mentionRule);
  md.inline.ruler.before('emphasis', 'zulip_channel_link', channelLinkRule);
  md.inline.ruler.before('emphasis', 'zulip_emoji', emojiRule);
  md.inline.ruler.before('autolink', 'zulip_global_time', globalTimeRule);
  md.core.ruler.push('zulip_linkifiers', linkifierRule);
  md.core.ruler.push('zulip_unicode_emoji', unicodeEmojiRule);
  md.core.ruler.push('zulip_link_facts', linkFacts);
  md.renderer.rules.zulip_html = (tokens, idx) => tokens[idx].content;
  md.renderer.rules.fence = (tokens, idx, _options, env) => {
    const token = tokens[idx];
    const { language, header } = fenceInfo(token.info, env as RenderEnv);
    if (language === 'quote' || language === 'quoted')
      return `<blockquote>\n${md.render(token.content, env)}</blockquote>\n`;
    if (language === 'spoiler') {
      // Zulip's spoiler block: the rest of the fence line is its header, shown; the content is hidden.
      return (
        `<div class="spoiler-block"><div class="spoiler-header">\n${header ? md.render(header, env) : ''}` +
        `</div><div class="spoiler-content" aria-hidden="true">\n${md.render(token.content, env)}</div></div>\n`
      );
    }
    return codeBlock(token.content, language);
  };
  md.renderer.rules.code_block = (tokens, idx) => codeBlock(tokens[idx].content, '');
}

const messageRenderer = createMarkdownRenderer([zulipMath, zulipMessageSyntax, zulipInlinePreviews]);

/**
 * Renders a message's Markdown with what `data` resolved (Zulip's render_message_markdown).
 * `linkifierBudget` bounds the time linkifiers may take (LINKIFIER_RENDER_BUDGET_MS by default).
 */
export function renderMessageMarkdown(
  content: string,
  data: MarkdownData,
  linkifierBudget = new LinkifierBudget(),
): RenderingResult {
  const env: RenderEnv = {
    data,
    result: {
      mentionedUserIds: new Set(),
      mentionedGroupIds: new Set(),
      streamWildcard: false,
      topicWildcard: false,
      hasLink: false,
      hasImage: false,
      linkifiersCutShort: false,
    },
    linkifierBudget,
  };
  const rendered = withThumbnails(messageRenderer.render(content, env).trim(), data.uploadPreviews);
  const html = rendered.html;
  if (linkedUploadPathIds(content).some((path) => IMAGE_PATH.test(path))) env.result.hasImage = true;
  env.result.linkifiersCutShort = linkifierBudget.exhausted;
  return { html, ...env.result, thumbnailSpinners: rendered.spinners };
}

// Topic links by linkifier list: a fetch loads its list once and asks for every message's
// topic, and most messages of a fetch share a few topics.
const topicLinksByLinkifiers = new WeakMap<CompiledLinkifier[], Map<string, { text: string; url: string }[]>>();

/**
 * Links shown beside a topic: linkifier matches and plain URLs, in order (Zulip's topic_links),
 * each URL through the sanitizer. Topics are scanned on every fetch, so they have a budget too.
 */
export function topicLinks(
  topic: string,
  linkifiers: CompiledLinkifier[],
  linkifierBudget?: LinkifierBudget,
): { text: string; url: string }[] {
  let known = topicLinksByLinkifiers.get(linkifiers);
  if (!known) topicLinksByLinkifiers.set(linkifiers, (known = new Map()));
  const cached = linkifierBudget ? undefined : known.get(topic);
  if (cached) return cached.map((link) => ({ ...link }));
  const budget = linkifierBudget ?? new LinkifierBudget();
  const links = linkifierMatches(topic, linkifiers, budget).map(({ index, text, url }) => ({ index, text, url }));
  for (const match of topic.matchAll(/https?:\/\/[^\s<>"]+[^\s<>".,;:!?)\]]/g)) {
    const index = match.index ?? 0;
    const url = sanitizeUrl(match[0]);
    if (url === null || links.some((link) => index >= link.index && index < link.index + link.text.length)) continue;
    links.push({ index, text: match[0], url });
  }
  const result = links.sort((a, b) => a.index - b.index).map(({ text, url }) => ({ text, url }));
  if (!linkifierBudget && !budget.exhausted) known.set(topic, result);
  return result.map((link) => ({ ...link }));
}
