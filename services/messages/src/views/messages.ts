import {
  JsonableError,
  LIST_LIMITS,
  optional,
  param,
  pathInt,
  required,
  v,
  type AuthedContext,
  type ViewContext,
} from '@teamchat/core';
import {
  allowsSpectators,
  loadActor,
  loadMarkdownData,
  MessageFlag,
  parseAnchor,
  parseNarrow,
  renderMessageMarkdown,
  spectatorRefused,
  spectatorViewer,
  viewerOf,
  webPublicChannelsWhere,
  webPublicNarrow,
} from '@teamchat/domain';
import { doSendMessage, normalizeBody } from '../actions/send-message';
import type { MessagesDeps } from '../deps';
import { defaultReadBySender, sendingClientName } from '../lib/client';
import { fetchMessages } from '../lib/fetch';
import { accessMessage, messagesForIds } from '../lib/messages';
import {
  extractPrivateRecipients,
  extractStreamIndicator,
  type PrivateRecipients,
  type StreamIndicator,
} from '../lib/recipients';

const MAX_MESSAGES_PER_FETCH = LIST_LIMITS.messagesPerFetch;
const tooManyMessages = () => `Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`;

const channelId = v.id();
const recipientIds = v.list(v.id(), { maxLength: LIST_LIMITS.directMessageRecipients });
const recipientEmails = v.list(v.str(), { maxLength: LIST_LIMITS.directMessageRecipients });

/** `to` of a channel message: a name (checked by the action, in Zulip's words) or an id that fits the column. */
function channelIndicator(raw: string): StreamIndicator {
  const indicator = extractStreamIndicator(raw);
  return typeof indicator === 'number' ? channelId(indicator, 'to') : indicator;
}

/** `to` of a direct message: ids that fit the column, or emails PostgreSQL can compare (no NUL). */
function directRecipients(raw: string): PrivateRecipients {
  const recipients = extractPrivateRecipients(raw);
  return typeof recipients[0] === 'number' ? recipientIds(recipients, 'to') : recipientEmails(recipients, 'to');
}

/** POST /messages */
export async function sendMessage({ deps, requester, params, req }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    type: required(param.enumString('direct', 'private', 'stream', 'channel')),
    to: optional(param.string({ allowNullBytes: true })),
    topic: optional(param.string({ allowNullBytes: true }), undefined, { aliases: ['subject'] }),
    content: required(param.string({ allowNullBytes: true })),
    queue_id: optional(param.string()),
    local_id: optional(param.string()),
    read_by_sender: optional(param.bool()),
    client: optional(param.string()),
    widget_content: optional(param.string()),
  });
  const sendingClient = sendingClientName(req, parsed.client);
  const options = {
    sendingClient,
    readBySender: parsed.read_by_sender ?? defaultReadBySender(sendingClient),
    localId: parsed.local_id,
    senderQueueId: parsed.queue_id,
    widgetContent: parsed.widget_content,
  };
  const isStream = parsed.type === 'stream' || parsed.type === 'channel';
  const result = isStream
    ? await doSendMessage(deps, requester, {
        type: 'stream',
        to: parsed.to === undefined ? undefined : channelIndicator(parsed.to),
        topic: parsed.topic,
        content: parsed.content,
        options,
      })
    : await doSendMessage(deps, requester, {
        type: 'private',
        to: parsed.to === undefined ? [] : directRecipients(parsed.to),
        content: parsed.content,
        options,
      });
  return { id: result.id };
}

/** GET /messages */
/**
 * GET /messages. A logged-out visitor (the gateway lets them through from /json only) reads
 * the web-public channels of an organisation that admits spectators, everything read, as Zulip's
 * get_messages_backend answers an anonymous request; anything else is refused as unauthenticated.
 */
export async function getMessages({ deps, requester, params, realmId }: ViewContext<MessagesDeps>) {
  const parsed = params.parse({
    anchor: optional(param.string()),
    include_anchor: optional(param.bool(), true),
    num_before: optional(param.int({ min: 0 }), 0),
    num_after: optional(param.int({ min: 0 }), 0),
    narrow: optional(
      param.json((value, name) => parseNarrow(value, name)),
      null,
    ),
    use_first_unread_anchor: optional(param.bool(), false),
    client_gravatar: optional(param.bool(), true),
    apply_markdown: optional(param.bool(), true),
    allow_empty_topic_name: optional(param.bool(), false),
    message_ids: optional(param.json(v.list(v.id(), { maxLength: MAX_MESSAGES_PER_FETCH, tooLong: tooManyMessages }))),
  });
  let includeAnchor = parsed.include_anchor;
  if (parsed.message_ids !== undefined) {
    if (parsed.num_before || parsed.num_after || parsed.anchor !== undefined || parsed.use_first_unread_anchor) {
      throw new JsonableError(
        'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor',
        { data: { parameters: 'num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor' } },
      );
    }
    includeAnchor = false;
  }
  const anchor = parsed.message_ids === undefined ? parseAnchor(parsed.anchor, parsed.use_first_unread_anchor) : 0;
  const requested = parsed.message_ids?.length ?? parsed.num_before + parsed.num_after;
  if (requested > MAX_MESSAGES_PER_FETCH) throw new JsonableError(tooManyMessages());
  if (parsed.num_before > 0 && parsed.num_after > 0 && !includeAnchor)
    throw new JsonableError('The anchor can only be excluded at an end of the range');

  const request = {
    anchor,
    includeAnchor,
    numBefore: parsed.num_before,
    numAfter: parsed.num_after,
    messageIds: parsed.message_ids,
  };
  if (!requester) {
    return deps.reads.readFor(realmId, async (db) => {
      const realm = await db.realm.findUnique({ where: { id: realmId } });
      if (!realm || !(await allowsSpectators(db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) throw spectatorRefused();
      const narrow = webPublicNarrow(parsed.narrow);
      return fetchMessages({ ...deps, db }, spectatorViewer(realm.id), realm, {
        ...request,
        narrow,
        spectator: true,
        // Zulip: avatar URLs always (each sender's email visibility decides, not the visitor's choice).
        finalize: {
          applyMarkdown: parsed.apply_markdown,
          clientGravatar: false,
          allowEmptyTopicName: parsed.allow_empty_topic_name,
        },
      });
    });
  }
  // A heavy read: the read replica serves it once it has replayed the organisation's last write.
  return deps.reads.readFor(requester.realmId, async (db) => {
    const { user, realm } = await loadActor(db, requester.userId);
    return fetchMessages({ ...deps, db }, viewerOf(user), realm, {
      ...request,
      narrow: parsed.narrow,
      finalize: {
        applyMarkdown: parsed.apply_markdown,
        clientGravatar: parsed.client_gravatar,
        allowEmptyTopicName: parsed.allow_empty_topic_name,
      },
    });
  });
}

/**
 * GET /messages/{message_id}. A logged-out visitor (from /json only, as GET /messages) fetches a
 * message of a web-public channel of an organisation that admits spectators, read (Zulip's
 * json_fetch_raw_message with access_web_public_message); anything else is refused as
 * unauthenticated, so a refusal never tells whether the message exists.
 */
export async function getMessage({ deps, requester, params, req, realmId }: ViewContext<MessagesDeps>) {
  const messageId = pathInt(req, 'message_id');
  const parsed = params.parse({
    apply_markdown: optional(param.bool(), true),
    allow_empty_topic_name: optional(param.bool(), false),
  });
  const finalize = {
    applyMarkdown: parsed.apply_markdown,
    clientGravatar: true,
    allowEmptyTopicName: parsed.allow_empty_topic_name,
  };
  if (!requester) {
    return deps.reads.readFor(realmId, async (db) => {
      const realm = await db.realm.findUnique({ where: { id: realmId } });
      if (!realm || !(await allowsSpectators(db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) throw spectatorRefused();
      const message = await db.message.findFirst({ where: { id: messageId, realm_id: realm.id } });
      const channel =
        message?.stream_id == null
          ? null
          : await db.stream.findFirst({
              where: { id: message.stream_id, ...webPublicChannelsWhere(realm.id) },
              select: { id: true },
            });
      if (!message || !channel) throw spectatorRefused();
      const [dict] = await messagesForIds(db, realm, [message.id], new Map([[message.id, MessageFlag.read]]), finalize);
      return { raw_content: message.content, message: dict };
    });
  }
  const { user, realm } = await loadActor(deps.db, requester.userId);
  const { message, flags } = await accessMessage(deps.db, viewerOf(user), messageId);
  const [dict] = await messagesForIds(deps.db, realm, [message.id], new Map([[message.id, flags]]), finalize);
  return { raw_content: message.content, message: dict };
}

/** POST /messages/render: a preview of what sending `content` would show. */
export async function renderMessage({ deps, requester, params }: AuthedContext<MessagesDeps>) {
  const { content } = params.parse({ content: required(param.string({ allowNullBytes: true })) });
  const body = normalizeBody(content);
  const { user } = await loadActor(deps.db, requester.userId);
  const rendering = renderMessageMarkdown(body, await loadMarkdownData(deps.db, viewerOf(user), body));
  return { rendered: rendering.html };
}
