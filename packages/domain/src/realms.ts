import type { Realm } from '@teamchat/db';

/** The realm's canonical URL, e.g. "https://chat.example.com". */
export function realmUrl(realm: Pick<Realm, 'host'>, scheme: string): string {
  return `${scheme}://${realm.host}`;
}

/** Domain of placeholder API emails (user{id}@{domain}): the realm's host without its port. */
export function placeholderEmailDomain(realm: Pick<Realm, 'host'>): string {
  return realm.host.split(':')[0] || 'teamchat.invalid';
}

export function placeholderEmail(userId: number, realm: Pick<Realm, 'host'>): string {
  return `user${userId}@${placeholderEmailDomain(realm)}`;
}

/** Server-wide limits and defaults that register and server_settings report. */
export const SERVER_LIMITS = {
  max_stream_name_length: 60,
  max_stream_description_length: 1024,
  max_topic_length: 60,
  max_message_length: 10000,
  max_file_upload_size_mib: 100,
  event_queue_longpoll_timeout_seconds: 90,
  server_typing_started_wait_period_milliseconds: 30000,
  server_typing_stopped_wait_period_milliseconds: 12000,
  server_typing_started_expiry_period_milliseconds: 45000,
  realm_empty_topic_display_name: 'general chat',
} as const;
