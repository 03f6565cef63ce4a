-- The send read (services/messages send-context.ts) takes a channel's active subscribers from
-- subscription alone, as Zulip's get_recipient_info does with its own is_user_active column:
-- joining user_profile for is_active probed one user row per subscriber, 1.5 of the read's
-- 1.9 ms at 1,000 subscribers.
--
-- 20261122110000 dropped an earlier copy of this column because the channels service, which
-- writes subscriptions, never learned of deactivations made by the users service. Here the
-- database keeps it, whoever writes: a subscription takes its user's is_active when it is
-- written (reading the user row FOR SHARE, so a deactivation in flight commits first, or waits
-- for the subscription and then sees it), and a change of is_active rewrites the user's
-- subscriptions in the same transaction.
--
-- Function bodies are escape strings with every semicolon written \073 (see 20261127010000).
ALTER TABLE "subscription" ADD COLUMN "is_user_active" BOOLEAN NOT NULL DEFAULT true;

UPDATE "subscription" s SET "is_user_active" = u.is_active FROM user_profile u
 WHERE u.id = s.user_profile_id AND NOT u.is_active;

CREATE FUNCTION subscription_takes_user_active() RETURNS TRIGGER LANGUAGE plpgsql AS E'
BEGIN
    SELECT is_active INTO NEW.is_user_active FROM user_profile WHERE id = NEW.user_profile_id FOR SHARE\073
    -- No such user: the foreign key reports it, after this trigger.
    IF NOT FOUND THEN NEW.is_user_active := true\073 END IF\073
    RETURN NEW\073
END ';

CREATE TRIGGER subscription_is_user_active
    BEFORE INSERT OR UPDATE OF user_profile_id, is_user_active ON subscription
    FOR EACH ROW EXECUTE FUNCTION subscription_takes_user_active();

CREATE FUNCTION user_active_to_subscriptions() RETURNS TRIGGER LANGUAGE plpgsql AS E'
BEGIN
    UPDATE subscription SET is_user_active = NEW.is_active WHERE user_profile_id = NEW.id\073
    RETURN NULL\073
END ';

CREATE TRIGGER user_profile_is_active_to_subscriptions
    AFTER UPDATE OF is_active ON user_profile
    FOR EACH ROW WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active)
    EXECUTE FUNCTION user_active_to_subscriptions();

-- The users whose own defaults turn channel notifications on (Zulip's default is off for both):
-- the send read and the notification job look them up here instead of reading every
-- subscriber's settings. The predicate is channelNotifiableSql's (packages/domain
-- notification-candidates.ts), word for word, or the planner cannot use the index.
CREATE INDEX "user_profile_channel_notification_defaults_idx" ON "user_profile" ("realm_id")
 WHERE is_active AND (settings->>'enable_stream_push_notifications' = 'true'
                      OR settings->>'enable_stream_email_notifications' = 'true');
