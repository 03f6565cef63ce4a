// Notifications that reach people: mobile push through Zulip's push notification service
// (the bouncer) and email through SMTP. The rules (who, why), the payloads, the bouncer client,
// the mailer and the reader of clients' activity; the worker's jobs use them (services/worker/src/jobs).
export * from './config';
export * from './triggers';
export * from './recipients';
export * from './activity';
export * from './payloads';
export * from './bouncer';
export * from './mailer';
export * from './emails';
export * from './group-mention';
