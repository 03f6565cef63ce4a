// The notification settings, under Zulip's names (zproject/default_settings.py): the push
// notification service ("bouncer") this server is registered with, and the SMTP server.
// Every process that sends (the worker, the users service's test notification) loads them.

import { env, loadEnv, type EnvOf } from '@teamchat/core';

export const notificationsEnvSpec = {
  PUSH_NOTIFICATION_BOUNCER_URL: env.string(
    "Zulip's Mobile Push Notification Service (or a compatible bouncer), e.g. https://push.zulipchat.com (empty: no push notifications)",
    '',
  ),
  ZULIP_SERVICES_URL: env.string('Zulip 10 name of PUSH_NOTIFICATION_BOUNCER_URL (used when that one is empty)', ''),
  ZULIP_ORG_ID: env.string("this server's uuid at the bouncer (zulip_org_id)", ''),
  ZULIP_ORG_KEY: env.string("this server's secret at the bouncer (zulip_org_key)", ''),
  PUSH_NOTIFICATION_DELAY_MS: env.int(
    "how long after a message its notifications wait, so that a user reading it is not buzzed (their client's poll shows they got it)",
    5_000,
  ),
  PUSH_NOTIFICATION_CLIENT_GRACE_MS: env.int(
    'a queue polled this recently counts as a client receiving messages, even when no poll is parked on it',
    15_000,
  ),
  EVENTS_HEARTBEAT_MIN_MS: env.int("the events service's shortest parked poll (to read its queues' last poll)", 45_000),
  EVENTS_HEARTBEAT_JITTER_MS: env.int("the events service's heartbeat jitter (to read its queues' last poll)", 10_000),
  EMAIL_HOST: env.string('SMTP server (empty: emails are written to EMAIL_LOG_DIR as .eml files)', ''),
  EMAIL_PORT: env.int('SMTP port', 587),
  EMAIL_HOST_USER: env.string('SMTP user name (empty: no authentication)', ''),
  EMAIL_HOST_PASSWORD: env.string('SMTP password', ''),
  EMAIL_USE_TLS: env.bool('STARTTLS on EMAIL_PORT (port 465: TLS from the start)', true),
  NOREPLY_EMAIL_ADDRESS: env.string('From address of notification emails', 'noreply@teamchat.invalid'),
  EMAIL_LOG_DIR: env.string('where emails go as .eml files when EMAIL_HOST is empty', 'var/log/emails'),
};

export type NotificationsConfig = EnvOf<typeof notificationsEnvSpec>;

export function loadNotificationsConfig(source: NodeJS.ProcessEnv = process.env): NotificationsConfig {
  return loadEnv(notificationsEnvSpec, source);
}

/** The bouncer's base URL, or null when push notifications are not configured (Zulip's push_notifications_configured). */
export function bouncerUrl(config: NotificationsConfig): string | null {
  const url = (config.PUSH_NOTIFICATION_BOUNCER_URL || config.ZULIP_SERVICES_URL).replace(/\/+$/, '');
  if (!url || !config.ZULIP_ORG_ID || !config.ZULIP_ORG_KEY) return null;
  return url;
}
