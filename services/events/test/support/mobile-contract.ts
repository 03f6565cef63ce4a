// What Zulip's mobile app (zulip-flutter) requires of the JSON it parses, from the fixture
// scripts/zulip-flutter-contract.mjs extracts from the app's source: a key it casts without a
// null check must be there and non-null, of the JSON type it casts to, and a strict enum's
// value one it knows. Anything else makes the app's parser throw: for the register response,
// the app cannot load the organisation at all.
import fs from 'node:fs';
import path from 'node:path';

interface FieldContract {
  required: boolean;
  custom?: boolean;
  type?: string;
  enum?: string;
  nested?: string;
  shape?: 'list' | 'map' | 'object';
}

interface Contract {
  source: string;
  classes: Record<string, Record<string, FieldContract>>;
  enums: Record<string, string[]>;
}

export const MOBILE_CONTRACT = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'zulip-flutter-contract.json'), 'utf8'),
) as Contract;

const JSON_TYPES: Record<string, (value: unknown) => boolean> = {
  String: (value) => typeof value === 'string',
  num: (value) => typeof value === 'number',
  int: (value) => Number.isInteger(value),
  bool: (value) => typeof value === 'boolean',
  List: (value) => Array.isArray(value),
  Map: (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
};

/** Where `value`, parsed as the app's class `className`, would make the app's parser throw ([] when it would not). */
export function mobileAppViolations(value: unknown, className: string, at = className): string[] {
  const fields = MOBILE_CONTRACT.classes[className];
  if (!fields) throw new Error(`the contract has no class ${className}`);
  if (!JSON_TYPES.Map(value)) return [`${at}: not an object`];
  const object = value as Record<string, unknown>;
  const violations: string[] = [];
  for (const [key, field] of Object.entries(fields)) {
    const item = object[key];
    if (item === undefined || item === null) {
      if (field.required) violations.push(`${at}.${key}: missing`);
      continue;
    }
    if (field.type && JSON_TYPES[field.type] && !JSON_TYPES[field.type](item))
      violations.push(`${at}.${key}: not a ${field.type} (${JSON.stringify(item)})`);
    if (field.enum && !MOBILE_CONTRACT.enums[field.enum].includes(String(item)))
      violations.push(
        `${at}.${key}: ${JSON.stringify(item)} is not one of ${MOBILE_CONTRACT.enums[field.enum].join(', ')}`,
      );
    if (!field.nested || !MOBILE_CONTRACT.classes[field.nested]) continue;
    if (field.shape === 'list' && Array.isArray(item))
      item.forEach((element, i) =>
        violations.push(...mobileAppViolations(element, field.nested!, `${at}.${key}[${i}]`)),
      );
    else if (field.shape === 'map' && JSON_TYPES.Map(item))
      for (const [name, element] of Object.entries(item))
        violations.push(...mobileAppViolations(element, field.nested, `${at}.${key}.${name}`));
    else if (field.shape === 'object') violations.push(...mobileAppViolations(item, field.nested, `${at}.${key}`));
  }
  return violations;
}

/** The app's class for an event (its Event.fromJson dispatch); undefined for events it ignores. */
export function mobileAppEventClass(event: { type: string; op?: string }): string | undefined {
  const byOp: Record<string, Record<string, string>> = {
    realm_user: { add: 'RealmUserAddEvent', remove: 'RealmUserRemoveEvent', update: 'RealmUserUpdateEvent' },
    stream: { create: 'ChannelCreateEvent', delete: 'ChannelDeleteEvent', update: 'ChannelUpdateEvent' },
    subscription: {
      add: 'SubscriptionAddEvent',
      remove: 'SubscriptionRemoveEvent',
      update: 'SubscriptionUpdateEvent',
      peer_add: 'SubscriptionPeerAddEvent',
      peer_remove: 'SubscriptionPeerRemoveEvent',
    },
    user_group: {
      add: 'UserGroupAddEvent',
      update: 'UserGroupUpdateEvent',
      add_members: 'UserGroupAddMembersEvent',
      remove_members: 'UserGroupRemoveMembersEvent',
      add_subgroups: 'UserGroupAddSubgroupsEvent',
      remove_subgroups: 'UserGroupRemoveSubgroupsEvent',
      remove: 'UserGroupRemoveEvent',
    },
    channel_folder: {
      add: 'ChannelFolderAddEvent',
      update: 'ChannelFolderUpdateEvent',
      reorder: 'ChannelFolderReorderEvent',
    },
    update_message_flags: { add: 'UpdateMessageFlagsAddEvent', remove: 'UpdateMessageFlagsRemoveEvent' },
    user_settings: { update: 'UserSettingsUpdateEvent' },
  };
  const byType: Record<string, string> = {
    alert_words: 'AlertWordsEvent',
    user_topic: 'UserTopicEvent',
    message: 'MessageEvent',
    update_message: 'UpdateMessageEvent',
    delete_message: 'DeleteMessageEvent',
    typing: 'TypingEvent',
    presence: 'PresenceEvent',
    reaction: 'ReactionEvent',
    heartbeat: 'HeartbeatEvent',
  };
  return event.op !== undefined && byOp[event.type] ? byOp[event.type][event.op] : byType[event.type];
}
