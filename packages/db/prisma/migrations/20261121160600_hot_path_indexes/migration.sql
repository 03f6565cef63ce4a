-- Indexes Prisma's schema language cannot express (expression and partial indexes).
-- Unread messages of a user: the hot path of unread counts, mark-all-read and is:unread.
CREATE INDEX "user_message_unread_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 1) = 0;
-- Starred and mentioned messages of a user.
CREATE INDEX "user_message_starred_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 2) <> 0;
CREATE INDEX "user_message_mentioned_idx" ON "user_message" ("user_profile_id", "message_id") WHERE ("flags" & 8) <> 0;
-- Topics compare case-insensitively (Zulip: upper(subject)).
CREATE INDEX "message_stream_topic_lower_idx" ON "message" ("stream_id", lower("topic"), "id");
-- Full-text search over message content.
CREATE INDEX "message_search_idx" ON "message" USING GIN (to_tsvector('english', "content"));
