// The whole HTTP surface of the messages service.
import { BODY_LIMITS, type Route } from '@teamchat/core';
import { EMOJI_DATA_PATH } from '@teamchat/domain';
import type { MessagesDeps } from './deps';
import { BIG_BLUE_BUTTON_JOIN_PATH } from './lib/video-calls';
import { createBigBlueButtonCall, joinBigBlueButtonCall } from './views/calls';
import { createDrafts, deleteDraft, editDraft, getDrafts } from './views/drafts';
import {
  markAllAsRead,
  markStreamAsRead,
  markTopicAsRead,
  updateMessageFlags,
  updateMessageFlagsForNarrow,
} from './views/flags';
import { getMatchesNarrow, getReadReceipts } from './views/message-queries';
import { getMessage, getMessages, renderMessage, sendMessage } from './views/messages';
import { deleteMessage, getMessageHistory, updateMessage } from './views/edit';
import { addReaction, getEmojiData, removeReaction } from './views/reactions';
import {
  createScheduledMessage,
  deleteScheduledMessage,
  deliverScheduledMessage,
  getScheduledMessages,
  updateScheduledMessage,
} from './views/scheduled-messages';
import { addSubmessage } from './views/submessage';
import { setMessageEditTypingStatus, setTypingStatus } from './views/typing';
import { receiveWebhook } from './views/webhooks';

export const routes: Route<MessagesDeps>[] = [
  { method: 'POST', path: '/api/v1/messages', view: sendMessage },
  // Anonymous: spectators read web-public channels (the view refuses anything else).
  { method: 'GET', path: '/api/v1/messages', view: getMessages, auth: 'anonymous' },
  { method: 'POST', path: '/api/v1/messages/render', view: renderMessage },
  { method: 'POST', path: '/api/v1/messages/flags', view: updateMessageFlags, bodyLimitBytes: BODY_LIMITS.idList },
  { method: 'POST', path: '/api/v1/messages/flags/narrow', view: updateMessageFlagsForNarrow },
  // Before /messages/:message_id, which would take "matches_narrow" for an id.
  { method: 'GET', path: '/api/v1/messages/matches_narrow', view: getMatchesNarrow },
  // Anonymous too: a spectator fetches one message of a web-public channel (the view refuses anything else).
  { method: 'GET', path: '/api/v1/messages/:message_id', view: getMessage, auth: 'anonymous' },
  { method: 'PATCH', path: '/api/v1/messages/:message_id', view: updateMessage },
  { method: 'DELETE', path: '/api/v1/messages/:message_id', view: deleteMessage },
  { method: 'GET', path: '/api/v1/messages/:message_id/history', view: getMessageHistory },
  { method: 'GET', path: '/api/v1/messages/:message_id/read_receipts', view: getReadReceipts },
  { method: 'POST', path: '/api/v1/messages/:message_id/reactions', view: addReaction },
  { method: 'DELETE', path: '/api/v1/messages/:message_id/reactions', view: removeReaction },
  { method: 'GET', path: EMOJI_DATA_PATH, view: getEmojiData, auth: 'anonymous' },
  { method: 'POST', path: '/api/v1/messages/:message_id/typing', view: setMessageEditTypingStatus },
  { method: 'POST', path: '/api/v1/mark_all_as_read', view: markAllAsRead },
  { method: 'POST', path: '/api/v1/mark_stream_as_read', view: markStreamAsRead },
  { method: 'POST', path: '/api/v1/mark_topic_as_read', view: markTopicAsRead },
  { method: 'POST', path: '/api/v1/submessage', view: addSubmessage },
  { method: 'POST', path: '/api/v1/typing', view: setTypingStatus },
  { method: 'GET', path: '/api/v1/drafts', view: getDrafts },
  { method: 'POST', path: '/api/v1/drafts', view: createDrafts },
  { method: 'PATCH', path: '/api/v1/drafts/:draft_id', view: editDraft },
  { method: 'DELETE', path: '/api/v1/drafts/:draft_id', view: deleteDraft },
  { method: 'GET', path: '/api/v1/calls/bigbluebutton/create', view: createBigBlueButtonCall },
  // A page the create call's link points at (the browser's session; logged out: to the login).
  { method: 'GET', path: BIG_BLUE_BUTTON_JOIN_PATH, view: joinBigBlueButtonCall, auth: 'anonymous' },
  { method: 'GET', path: '/api/v1/scheduled_messages', view: getScheduledMessages },
  { method: 'POST', path: '/api/v1/scheduled_messages', view: createScheduledMessage },
  { method: 'PATCH', path: '/api/v1/scheduled_messages/:scheduled_message_id', view: updateScheduledMessage },
  { method: 'DELETE', path: '/api/v1/scheduled_messages/:scheduled_message_id', view: deleteScheduledMessage },
  { method: 'POST', path: '/internal/scheduled_messages/:scheduled_message_id/deliver', view: deliverScheduledMessage },
  // Incoming webhooks: the body is read as each integration needs it (webhooks/registry.ts).
  { method: 'POST', path: '/api/v1/external/:integration_name', view: receiveWebhook, body: 'raw' },
];
