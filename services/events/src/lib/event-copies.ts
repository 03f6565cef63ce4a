// Each queue's copy of an event: whether the queue accepts it (Zulip's ClientDescriptor.accepts_event)
// and how it is shaped for that client (finalize_payload for messages, the empty-topic
// rewrite, legacy forms for clients without a capability). Producers may put internal fields
// in an event, named with a leading "_" (e.g. message._external_avatar); no client sees them.

import type { ZulipEvent, ZulipEventOf } from '@teamchat/bus';
import { narrowMatchesMessage, SERVER_LIMITS } from '@teamchat/domain';
import type { QueueDescriptor } from './queue-options';

/** A copy of an event as a queue gets it (JSON). */
type EventCopy = Record<string, unknown>;
type MessageEvent = ZulipEventOf<'message'>;

const EMPTY_TOPIC_NAME = SERVER_LIMITS.realm_empty_topic_display_name;

/** Fields of a descriptor that change which events a queue gets or how they look. */
export function copyClassOf(descriptor: QueueDescriptor): string {
  const { userId: _userId, realmId: _realmId, lifespanSecs: _lifespan, ...shape } = descriptor;
  return JSON.stringify(shape);
}

function accepts(descriptor: QueueDescriptor, event: ZulipEvent, flags: string[]): boolean {
  const type = event.type;
  if (descriptor.eventTypes !== null) {
    if (!descriptor.eventTypes.includes(type)) return false;
    // Clients asking for both get the modern user_topic events only.
    if (type === 'muted_topics' && descriptor.eventTypes.includes('user_topic')) return false;
  }
  const capabilities = descriptor.capabilities;
  switch (event.type) {
    case 'message':
      return narrowMatchesMessage(descriptor.narrow, event.message, flags);
    case 'typing':
      return event.stream_id === undefined || capabilities.stream_typing_notifications === true;
    case 'update_display_settings':
    case 'update_global_notifications':
      return !capabilities.user_settings_object;
    case 'user_group':
      if (event.op === 'remove') return !capabilities.include_deactivated_groups;
      if (event.op === 'update' && event.data.deactivated !== undefined)
        return capabilities.include_deactivated_groups === true;
      return true;
    default:
      return true;
  }
}

function withoutInternalFields(object: object): EventCopy {
  const out: EventCopy = {};
  for (const [key, value] of Object.entries(object)) if (!key.startsWith('_')) out[key] = value;
  return out;
}

function finalizeMessage(descriptor: QueueDescriptor, message: MessageEvent['message']): EventCopy {
  const out = withoutInternalFields(message);
  if (descriptor.applyMarkdown) {
    out.content = message.rendered_content ?? message.content;
    out.content_type = 'text/html';
  } else {
    out.content_type = 'text/x-markdown';
  }
  delete out.rendered_content;
  if (descriptor.clientGravatar && message._external_avatar === true) out.avatar_url = null;
  if (out.subject === '' && !descriptor.capabilities.empty_topic_name) out.subject = EMPTY_TOPIC_NAME;
  return out;
}

function renameEmptyTopic(object: object, ...fields: string[]): EventCopy {
  const out: EventCopy = { ...object };
  for (const field of fields) if (out[field] === '') out[field] = EMPTY_TOPIC_NAME;
  return out;
}

/** The queue's form of an accepted event: usually one event, several for legacy bulk deletions. */
function shape(descriptor: QueueDescriptor, event: ZulipEvent): EventCopy[] {
  const capabilities = descriptor.capabilities;
  const allowEmptyTopic = capabilities.empty_topic_name === true;
  switch (event.type) {
    case 'message':
      return [{ ...event, message: finalizeMessage(descriptor, event.message) }];
    case 'update_message':
      return [allowEmptyTopic ? event : renameEmptyTopic(event, 'orig_subject', 'subject', 'topic')];
    case 'typing':
      return [allowEmptyTopic ? event : renameEmptyTopic(event, 'topic')];
    case 'delete_message': {
      const renamed = allowEmptyTopic ? event : renameEmptyTopic(event, 'topic');
      if (capabilities.bulk_message_deletion || event.message_ids === undefined) return [renamed];
      // Clients without bulk_message_deletion get one event per message.
      const { message_ids: _messageIds, ...single } = renamed;
      return event.message_ids.map((messageId) => ({ ...single, message_id: messageId }));
    }
    case 'typing_edit_message': {
      const recipient = event.recipient;
      if (allowEmptyTopic || recipient.type !== 'channel' || recipient.topic !== '') return [event];
      return [{ ...event, recipient: renameEmptyTopic(recipient, 'topic') }];
    }
    case 'user_topic':
      return [allowEmptyTopic ? event : renameEmptyTopic(event, 'topic_name')];
    case 'update_message_flags': {
      const details = event.message_details;
      if (allowEmptyTopic || !details) return [event];
      const renamed = Object.fromEntries(
        Object.entries(details).map(([id, detail]) => [
          id,
          detail.type === 'stream' ? renameEmptyTopic(detail, 'topic') : detail,
        ]),
      );
      return [{ ...event, message_details: renamed }];
    }
    case 'presence': {
      if (!descriptor.slimPresence) return [event];
      const { email: _email, ...slim } = event;
      return [slim];
    }
    case 'realm_user': {
      // Users the recipient cannot access are announced only to clients that need the full list.
      if (event.op !== 'add' || event.inaccessible_user === undefined) return [event];
      const { inaccessible_user: inaccessible, ...rest } = event;
      return inaccessible && capabilities.user_list_incomplete ? [] : [rest];
    }
    case 'user_group': {
      // A renamed deactivated group only matters to clients that keep deactivated groups.
      if (event.op !== 'update' || event.deactivated === undefined) return [event];
      const { deactivated, ...rest } = event;
      return deactivated && !capabilities.include_deactivated_groups ? [] : [rest];
    }
    default:
      return [event];
  }
}

/**
 * The JSON events `descriptor`'s queue gets for `event`, sent to its user with `extras`
 * (the recipient's own fields, such as message flags; null when the user was not a
 * recipient and the queue sees the event because it is realm-wide).
 */
export function copiesFor(descriptor: QueueDescriptor, event: ZulipEvent, extras: EventCopy | null): EventCopy[] {
  const flags = extras !== null && Array.isArray(extras.flags) ? extras.flags.map(String) : [];
  if (!accepts(descriptor, event, flags)) return [];
  return shape(descriptor, event).map((copy) => {
    const userCopy = withoutInternalFields({ ...copy, ...(extras ?? {}) });
    delete userCopy.id;
    if (userCopy.type === 'message' && !Array.isArray(userCopy.flags)) userCopy.flags = [];
    return userCopy;
  });
}
