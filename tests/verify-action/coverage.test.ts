// Every event type producers may send (the ZulipEvent union of @teamchat/bus) has a
// verify-action case: the record below must name one for each type (the compiler refuses a
// missing key), the named test must exist in its file, and applyEvent must know the type.
// The types are also listed at run time (ZULIP_EVENT_TYPES), so the check holds where tests run untyped.
import fs from 'node:fs';
import path from 'node:path';
import { ZULIP_EVENT_TYPES, type ZulipEventType } from '@teamchat/bus';
import { appliedEventTypes } from '@teamchat/testing';

/** For each event type: the suite file and a test title in it whose action sends it. */
const CASES: Record<ZulipEventType, [file: string, title: string]> = {
  message: ['messages', 'a channel message from someone else'],
  update_message: ['messages', "an unread message's topic changed"],
  delete_message: ['messages', 'an unread channel message deleted'],
  update_message_flags: ['messages', 'messages marked read, then unread'],
  reaction: ['personal', 'a reaction added and removed'],
  submessage: ['personal', 'a submessage'],
  typing: ['personal', 'typing start and stop'],
  typing_edit_message: ['coverage-transient', 'typing while editing a message'],
  drafts: ['personal', 'a draft created, edited, deleted'],
  attachment: ['coverage-transient', 'an attachment uploaded and deleted'],
  scheduled_messages: ['personal', 'a scheduled message created, rescheduled, edited, deleted'],
  stream: ['channels', 'channel update: %s'],
  subscription: ['channels', 'unsubscribing, then subscribing again'],
  channel_folder: ['channels', 'a channel folder created, updated, archived'],
  default_streams: ['channels', 'a default channel added and removed'],
  muted_topics: ['channels', 'a topic muted, followed, then back to the default'],
  user_topic: ['channels', 'a topic muted, followed, then back to the default'],
  realm_user: ['users', "another user's role set to %s and back"],
  realm_bot: ['users', 'a bot created, updated, deactivated'],
  user_group: ['users', 'a user group created, renamed, its members and subgroups changed, deactivated'],
  user_settings: ['realm', 'user setting %s'],
  update_global_notifications: ['realm', 'user setting %s'],
  update_display_settings: ['realm', 'user setting %s'],
  navigation_view: ['personal', 'a navigation view added, updated, removed'],
  alert_words: ['personal', 'alert words added and removed'],
  muted_users: ['users', 'a user muted and unmuted'],
  user_status: ['users', 'user status set and cleared'],
  saved_snippets: ['personal', 'a saved snippet created, edited, deleted'],
  realm_playgrounds: ['realm', 'a code playground added and removed'],
  realm_user_settings_defaults: ['realm', "the organisation's default %s for new users"],
  realm: ['realm', 'PATCH /realm: %s'],
  realm_domains: ['realm', 'a realm domain added, changed, removed'],
  onboarding_steps: ['personal', 'an onboarding step marked read'],
  presence: ['users', 'presence of another user'],
  invites_changed: ['coverage-transient', 'an invitation sent and revoked'],
  realm_emoji: ['realm', 'a custom emoji added and removed'],
  realm_export: ['coverage-transient', 'an export started'],
  realm_linkifiers: ['realm', 'a linkifier added, updated, removed'],
  custom_profile_fields: ['users', 'a custom profile field created, reordered, and a value set and cleared'],
};

/** The `type` of every member of the ZulipEvent union (the keys of @teamchat/bus's event schemas). */
function declaredEventTypes(): string[] {
  return ZULIP_EVENT_TYPES;
}

test('the declared event types are found', () => {
  expect(declaredEventTypes()).toEqual(expect.arrayContaining(['message', 'realm_user', 'channel_folder']));
});

test.each(declaredEventTypes())('event type %s has a verify-action case and an applyEvent rule', (type) => {
  const entry = (CASES as Record<string, [string, string] | undefined>)[type];
  expect(entry).toBeDefined();
  const [file, title] = entry!;
  const source = fs.readFileSync(path.join(__dirname, `${file}.test.ts`), 'utf8');
  expect(source).toContain(title);
  expect(appliedEventTypes()).toContain(type);
});
