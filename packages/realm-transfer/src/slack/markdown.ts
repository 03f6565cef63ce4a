// Slack's message text ("mrkdwn") as Zulip Markdown, the way Zulip 10.2's Slack importer
// rewrites it (zerver/data_import/slack_message_conversion.py): *bold*, _italic_ and ~strike~
// with Slack's word-boundary rules, <!everyone>/<!channel>/<!here> as @**all**, channel links
// <#C123|name> as #**name**, user mentions <@U123> as @**Full Name**, <url|text> links and
// <mailto:...> addresses. The patterns are Python's, translated: a Python `$` (end of text, or
// before a final newline) is written (?=\n?$); `\w` is Unicode-aware as in Python.

/** The fields of a Slack user the conversion reads. */
export interface SlackUserName {
  id: string;
  name: string;
  deleted?: boolean;
  real_name?: string;
  is_mirror_dummy?: boolean;
  profile?: { real_name?: string };
}

const PY_END = '(?=\\n?$)';

const LINK_REGEX =
  /(<)(http:\/\/www\.|https:\/\/www\.|http:\/\/|https:\/\/|ftp:\/\/)?([a-z0-9]+([-.]{1}[a-z0-9]+)*)(\.)([a-z]{2,63}(:[0-9]{1,5})?)(\/[^>]*)?(\|)?(?:\|([^>]+))?(>)/g;

const MAILTO_REGEX =
  /<((mailto:)?([\p{L}\p{N}_.-]+@[\p{L}\p{N}_.-]+(\.[\p{L}\p{N}_]+)+))(\|)?([\p{L}\p{N}_.-]+@[\p{L}\p{N}_.-]+(\.[\p{L}\p{N}_]+)+)?>/gu;

const USER_MENTION = '(<@)([a-zA-Z0-9]+)(\\|)?([a-zA-Z0-9]+)?(>)';

// Slack has no mid-word formatting: ~stri~ke is not struck through, so each marker must follow
// and precede one of these characters (the ranges are Python's, kept as they are).
const STRIKETHROUGH_REGEX = new RegExp(
  `(^|[ -(]|[+-/]|\\*|_|[:-?]|\\{|\\[|\\||\\^)(~)([ -)+-}—]*)([ -}]+)(~)(${PY_END}|[ -']|[+-/]|[:-?]|\\*|_|\\}|\\)|\\]|\\||\\^)`,
  'g',
);
const ITALIC_REGEX = new RegExp(
  `(^|[ -*]|[+-/]|[:-?]|\\{|\\[|\\||\\^|~)(_)([ -^\`~—]*)([ -^\`-~]+)(_)(${PY_END}|[ -']|[+-/]|[:-?]|\\}|\\)|\\]|\\*|\\||\\^|~)`,
  'g',
);
const BOLD_REGEX = new RegExp(
  `(^|[ -(]|[+-/]|[:-?]|\\{|\\[|_|\\||\\^|~)(\\*)([ -)+-~—]*)([ -)+-~]+)(\\*)(${PY_END}|[ -']|[+-/]|[:-?]|\\}|\\)|\\]|_|\\||\\^|~)`,
  'g',
);

/** Python's str.replace: every non-overlapping occurrence, left to right. */
function replaceAll(text: string, from: string, to: string): string {
  return from === '' ? text : text.split(from).join(to);
}

/** The name Zulip gives a Slack user (get_user_full_name). */
export function slackUserFullName(user: SlackUserName): string {
  if (user.deleted === false) return user.real_name || user.name;
  if (user.is_mirror_dummy) return user.profile?.real_name ?? user.name;
  return user.name;
}

/** One formatting marker pair, Slack's to Zulip's (convert_markdown_syntax). */
function convertMarkdownSyntax(text: string, regex: RegExp, zulipKeyword: string): string {
  let result = text;
  for (const match of text.matchAll(regex)) {
    const converted = match[1] + zulipKeyword + match[3] + match[4] + zulipKeyword + match[6];
    result = replaceAll(result, match[0], converted);
  }
  return result;
}

export function convertSlackFormatting(text: string): string {
  let result = convertMarkdownSyntax(text, BOLD_REGEX, '**');
  result = convertMarkdownSyntax(result, STRIKETHROUGH_REGEX, '~~');
  return convertMarkdownSyntax(result, ITALIC_REGEX, '*');
}

export function convertSlackWorkspaceMentions(text: string): string {
  return replaceAll(
    replaceAll(replaceAll(text, '<!everyone>', '@**all**'), '<!channel>', '@**all**'),
    '<!here>',
    '@**all**',
  );
}

/** <https://foo.com> as https://foo.com, <https://foo.com|foo> as [foo](https://foo.com). */
export function convertLinkFormat(text: string): { text: string; hasLink: boolean } {
  let result = text;
  let hasLink = false;
  for (const match of text.matchAll(LINK_REGEX)) {
    const slackUrl = match[0];
    const inner = slackUrl.slice(1, -1);
    const pipe = inner.indexOf('|');
    const converted = pipe >= 0 ? `[${inner.slice(pipe + 1)}](${inner.slice(0, pipe)})` : inner;
    hasLink = true;
    result = replaceAll(result, slackUrl, converted);
  }
  return { text: result, hasLink };
}

/** <mailto:foo@foo.com> and <mailto:foo@foo.com|foo@foo.com> as mailto:foo@foo.com. */
export function convertMailtoFormat(text: string): { text: string; hasLink: boolean } {
  let result = text;
  let hasLink = false;
  for (const match of text.matchAll(MAILTO_REGEX)) {
    hasLink = true;
    result = replaceAll(result, match[0], match[1]);
  }
  return { text: result, hasLink };
}

export interface MarkdownContext {
  users: SlackUserName[];
  /** Channel name to its Slack id, as added to the organisation. */
  channelIds: Map<string, string>;
  /** Slack user id to the new user id. */
  userIds: Map<string, number>;
}

/** A token's user mention as @**Full Name**, when the user (and short name, if given) is known. */
function userMention(token: string, context: MarkdownContext): { token: string; userId: number | null } {
  const match = new RegExp(USER_MENTION).exec(token)!;
  const shortName = match[4];
  const slackId = match[2];
  for (const user of context.users) {
    if (user.id === slackId && (shortName === undefined || (user.name === shortName && shortName !== ''))) {
      const mention = `@**${slackUserFullName(user)}**`;
      return {
        token: token.replace(new RegExp(USER_MENTION, 'g'), () => mention),
        userId: context.userIds.get(slackId) ?? null,
      };
    }
  }
  return { token, userId: null };
}

/** Slack's text as Zulip Markdown, the users it mentions and whether it has a link (convert_to_zulip_markdown). */
export function convertToZulipMarkdown(
  input: string,
  context: MarkdownContext,
): { content: string; mentionedUserIds: number[]; hasLink: boolean } {
  let text = convertSlackWorkspaceMentions(convertSlackFormatting(input));
  for (const [name, id] of context.channelIds) text = replaceAll(text, `<#${id}|${name}>`, `#**${name}**`);

  const mentionedUserIds: number[] = [];
  const tokens = text.split(' ');
  for (let index = 0; index < tokens.length; index++) {
    if (new RegExp(USER_MENTION).test(tokens[index])) {
      const { token, userId } = userMention(tokens[index], context);
      tokens[index] = token;
      if (userId !== null) mentionedUserIds.push(userId);
    }
  }
  text = tokens.join(' ');

  const link = convertLinkFormat(text);
  const mailto = convertMailtoFormat(link.text);
  return { content: mailto.text, mentionedUserIds, hasLink: link.hasLink || mailto.hasLink };
}
