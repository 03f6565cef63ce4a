-- Partial indexes on user_message.flags for the messages service (bits: see MessageFlag in
-- packages/domain/src/messages.ts). Queries must use these exact expressions.
-- Direct messages of a user (is:dm, dm narrows, recent_private_conversations): is_private = 2048.
CREATE INDEX "user_message_is_private_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 2048) <> 0;
-- Any mention of a user (is:mentioned): mentioned | stream_wildcard | topic_wildcard | group = 120.
CREATE INDEX "user_message_any_mentioned_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 120) <> 0;
-- Messages of a channel by id (channel narrows without a topic, first_message_id, history reads).
CREATE INDEX "message_stream_id_id_idx" ON "message" ("stream_id", "id");
