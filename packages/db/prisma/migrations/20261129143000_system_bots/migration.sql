-- Zulip's system bots (settings.INTERNAL_BOTS) in their own organisation, zulipinternal, as
-- Zulip keeps them: one set for the whole server, the senders of what the server itself writes
-- into every organisation's feed (packages/domain/src/notification-bot.ts). Their ids are fixed
-- and far above what the sequences hand out, so adding them to a running deployment or a fresh
-- one moves no other row's id. Nobody logs in there: the realm's host is under .invalid.
INSERT INTO "realm" ("id", "string_id", "name", "host", "invite_required")
VALUES (2000000000, 'zulipinternal', 'System bot realm', 'zulipinternal.invalid', true)
ON CONFLICT DO NOTHING;

INSERT INTO "user_profile" ("id", "realm_id", "email", "delivery_email", "full_name", "role", "is_bot", "bot_type")
VALUES
  (2000000001, 2000000000, 'notification-bot@zulip.com', 'notification-bot@zulip.com', 'Notification Bot', 400, true, 1),
  (2000000002, 2000000000, 'emailgateway@zulip.com', 'emailgateway@zulip.com', 'Email Gateway', 400, true, 1),
  (2000000003, 2000000000, 'nagios-send-bot@zulip.com', 'nagios-send-bot@zulip.com', 'Nagios Send Bot', 400, true, 1),
  (2000000004, 2000000000, 'nagios-receive-bot@zulip.com', 'nagios-receive-bot@zulip.com', 'Nagios Receive Bot', 400, true, 1),
  (2000000005, 2000000000, 'welcome-bot@zulip.com', 'welcome-bot@zulip.com', 'Welcome Bot', 400, true, 1)
ON CONFLICT DO NOTHING;
