-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "realm" (
    "id" SERIAL NOT NULL,
    "string_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "host" TEXT NOT NULL,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "invite_required" BOOLEAN NOT NULL DEFAULT true,
    "waiting_period_threshold" INTEGER NOT NULL DEFAULT 0,
    "enable_spectator_access" BOOLEAN NOT NULL DEFAULT false,
    "topics_policy" TEXT NOT NULL DEFAULT 'allow_empty_topic',
    "message_retention_days" INTEGER NOT NULL DEFAULT -1,
    "upload_quota_bytes" BIGINT,
    "default_language" TEXT NOT NULL DEFAULT 'en',
    "settings" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "realm_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_profile" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "delivery_email" TEXT NOT NULL,
    "full_name" TEXT NOT NULL,
    "role" INTEGER NOT NULL DEFAULT 400,
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "is_bot" BOOLEAN NOT NULL DEFAULT false,
    "bot_type" INTEGER,
    "bot_owner_id" INTEGER,
    "password_hash" TEXT,
    "date_joined" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "timezone" TEXT NOT NULL DEFAULT '',
    "avatar_source" TEXT NOT NULL DEFAULT 'G',
    "avatar_version" INTEGER NOT NULL DEFAULT 1,
    "email_address_visibility" INTEGER NOT NULL DEFAULT 1,
    "default_language" TEXT NOT NULL DEFAULT 'en',
    "last_active_at" TIMESTAMPTZ(6),
    "settings" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "user_profile_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "key_hash" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_presence" (
    "user_profile_id" INTEGER NOT NULL,
    "last_active_time" TIMESTAMPTZ(6),
    "last_connected_time" TIMESTAMPTZ(6),

    CONSTRAINT "user_presence_pkey" PRIMARY KEY ("user_profile_id")
);

-- CreateTable
CREATE TABLE "user_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT,
    "description" TEXT NOT NULL DEFAULT '',
    "named" BOOLEAN NOT NULL DEFAULT true,
    "is_system_group" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,

    CONSTRAINT "user_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group_membership" (
    "user_group_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,

    CONSTRAINT "user_group_membership_pkey" PRIMARY KEY ("user_group_id","user_profile_id")
);

-- CreateTable
CREATE TABLE "group_group_membership" (
    "supergroup_id" INTEGER NOT NULL,
    "subgroup_id" INTEGER NOT NULL,

    CONSTRAINT "group_group_membership_pkey" PRIMARY KEY ("supergroup_id","subgroup_id")
);

-- CreateTable
CREATE TABLE "group_setting" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "owner_kind" TEXT NOT NULL,
    "owner_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "group_id" INTEGER NOT NULL,

    CONSTRAINT "group_setting_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "channel_folder" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "rendered_description" TEXT NOT NULL DEFAULT '',
    "order" INTEGER NOT NULL DEFAULT 0,
    "is_archived" BOOLEAN NOT NULL DEFAULT false,
    "creator_id" INTEGER,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "channel_folder_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "stream" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "rendered_description" TEXT NOT NULL DEFAULT '',
    "invite_only" BOOLEAN NOT NULL DEFAULT false,
    "is_web_public" BOOLEAN NOT NULL DEFAULT false,
    "history_public_to_subscribers" BOOLEAN NOT NULL DEFAULT true,
    "is_archived" BOOLEAN NOT NULL DEFAULT false,
    "is_default" BOOLEAN NOT NULL DEFAULT false,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,
    "message_retention_days" INTEGER,
    "first_message_id" INTEGER,
    "folder_id" INTEGER,
    "topics_policy" TEXT NOT NULL DEFAULT 'inherit',
    "is_recently_active" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "stream_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "is_user_active" BOOLEAN NOT NULL DEFAULT true,
    "color" TEXT NOT NULL DEFAULT '#c2c2c2',
    "pin_to_top" BOOLEAN NOT NULL DEFAULT false,
    "is_muted" BOOLEAN NOT NULL DEFAULT false,
    "desktop_notifications" BOOLEAN,
    "audible_notifications" BOOLEAN,
    "push_notifications" BOOLEAN,
    "email_notifications" BOOLEAN,
    "wildcard_mentions_notify" BOOLEAN,
    "date_subscribed" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "stream_id" INTEGER,
    "topic" TEXT NOT NULL DEFAULT '',
    "dm_key" TEXT,
    "content" TEXT NOT NULL,
    "rendered_content" TEXT,
    "rendered_content_version" INTEGER,
    "date_sent" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_edit_time" TIMESTAMPTZ(6),
    "edit_history" JSONB,
    "has_attachment" BOOLEAN NOT NULL DEFAULT false,
    "has_image" BOOLEAN NOT NULL DEFAULT false,
    "has_link" BOOLEAN NOT NULL DEFAULT false,
    "sending_client" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_message" (
    "id" BIGSERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    "flags" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "user_message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "reaction" (
    "id" SERIAL NOT NULL,
    "message_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "emoji_name" TEXT NOT NULL,
    "emoji_code" TEXT NOT NULL,
    "reaction_type" TEXT NOT NULL DEFAULT 'unicode_emoji',

    CONSTRAINT "reaction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "draft" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "to" INTEGER[],
    "topic" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "last_edit_time" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "draft_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_topic" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,
    "topic_name" TEXT NOT NULL,
    "visibility_policy" INTEGER NOT NULL,
    "last_updated" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_topic_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "navigation_view" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "fragment" TEXT NOT NULL,
    "is_pinned" BOOLEAN NOT NULL,
    "name" TEXT,

    CONSTRAINT "navigation_view_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "push_device_token" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "kind" INTEGER NOT NULL,
    "token" TEXT NOT NULL,
    "ios_app_id" TEXT,
    "last_updated" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_device_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "linkifier" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "pattern" TEXT NOT NULL,
    "url_template" TEXT NOT NULL,
    "order" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "linkifier_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "custom_profile_field" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "hint" TEXT NOT NULL DEFAULT '',
    "field_type" INTEGER NOT NULL,
    "field_data" TEXT NOT NULL DEFAULT '',
    "order" INTEGER NOT NULL DEFAULT 0,
    "display_in_profile_summary" BOOLEAN NOT NULL DEFAULT false,
    "required" BOOLEAN NOT NULL DEFAULT false,
    "editable_by_user" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "custom_profile_field_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "custom_profile_field_value" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "field_id" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "rendered_value" TEXT,

    CONSTRAINT "custom_profile_field_value_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "multiuse_invite" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "referred_by_id" INTEGER NOT NULL,
    "confirmation_key" TEXT NOT NULL,
    "invited_as" INTEGER NOT NULL DEFAULT 400,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiry_date" TIMESTAMPTZ(6),
    "status" INTEGER NOT NULL DEFAULT 0,
    "include_realm_default_subscriptions" BOOLEAN NOT NULL DEFAULT false,
    "welcome_message_custom_text" TEXT,
    "stream_ids" INTEGER[],
    "group_ids" INTEGER[],

    CONSTRAINT "multiuse_invite_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attachment" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "owner_id" INTEGER NOT NULL,
    "path_id" TEXT NOT NULL,
    "file_name" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "content_type" TEXT,
    "create_time" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "attachment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attachment_message" (
    "attachment_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,

    CONSTRAINT "attachment_message_pkey" PRIMARY KEY ("attachment_id","message_id")
);

-- CreateTable
CREATE TABLE "event_outbox" (
    "id" BIGSERIAL NOT NULL,
    "xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),
    "realm_id" INTEGER NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "realm_string_id_key" ON "realm"("string_id");

-- CreateIndex
CREATE UNIQUE INDEX "realm_host_key" ON "realm"("host");

-- CreateIndex
CREATE INDEX "user_profile_realm_id_is_active_idx" ON "user_profile"("realm_id", "is_active");

-- CreateIndex
CREATE UNIQUE INDEX "user_profile_realm_id_delivery_email_key" ON "user_profile"("realm_id", "delivery_email");

-- CreateIndex
CREATE UNIQUE INDEX "user_profile_realm_id_email_key" ON "user_profile"("realm_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_key_hash_key" ON "api_key"("key_hash");

-- CreateIndex
CREATE INDEX "api_key_user_profile_id_idx" ON "api_key"("user_profile_id");

-- CreateIndex
CREATE INDEX "user_group_realm_id_named_idx" ON "user_group"("realm_id", "named");

-- CreateIndex
CREATE UNIQUE INDEX "user_group_realm_id_name_key" ON "user_group"("realm_id", "name");

-- CreateIndex
CREATE INDEX "user_group_membership_user_profile_id_idx" ON "user_group_membership"("user_profile_id");

-- CreateIndex
CREATE INDEX "group_group_membership_subgroup_id_idx" ON "group_group_membership"("subgroup_id");

-- CreateIndex
CREATE INDEX "group_setting_group_id_idx" ON "group_setting"("group_id");

-- CreateIndex
CREATE UNIQUE INDEX "group_setting_owner_kind_owner_id_name_key" ON "group_setting"("owner_kind", "owner_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "channel_folder_realm_id_name_key" ON "channel_folder"("realm_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "stream_realm_id_name_key" ON "stream"("realm_id", "name");

-- CreateIndex
CREATE INDEX "subscription_stream_id_active_idx" ON "subscription"("stream_id", "active");

-- CreateIndex
CREATE UNIQUE INDEX "subscription_user_profile_id_stream_id_key" ON "subscription"("user_profile_id", "stream_id");

-- CreateIndex
CREATE INDEX "message_stream_id_topic_id_idx" ON "message"("stream_id", "topic", "id");

-- CreateIndex
CREATE INDEX "message_realm_id_dm_key_id_idx" ON "message"("realm_id", "dm_key", "id");

-- CreateIndex
CREATE INDEX "message_sender_id_id_idx" ON "message"("sender_id", "id");

-- CreateIndex
CREATE INDEX "user_message_message_id_idx" ON "user_message"("message_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_message_user_profile_id_message_id_key" ON "user_message"("user_profile_id", "message_id");

-- CreateIndex
CREATE UNIQUE INDEX "reaction_message_id_user_profile_id_emoji_code_reaction_typ_key" ON "reaction"("message_id", "user_profile_id", "emoji_code", "reaction_type");

-- CreateIndex
CREATE INDEX "draft_user_profile_id_idx" ON "draft"("user_profile_id");

-- CreateIndex
CREATE INDEX "user_topic_stream_id_topic_name_idx" ON "user_topic"("stream_id", "topic_name");

-- CreateIndex
CREATE UNIQUE INDEX "user_topic_user_profile_id_stream_id_topic_name_key" ON "user_topic"("user_profile_id", "stream_id", "topic_name");

-- CreateIndex
CREATE UNIQUE INDEX "navigation_view_user_profile_id_fragment_key" ON "navigation_view"("user_profile_id", "fragment");

-- CreateIndex
CREATE UNIQUE INDEX "push_device_token_user_profile_id_kind_token_key" ON "push_device_token"("user_profile_id", "kind", "token");

-- CreateIndex
CREATE UNIQUE INDEX "linkifier_realm_id_pattern_key" ON "linkifier"("realm_id", "pattern");

-- CreateIndex
CREATE UNIQUE INDEX "custom_profile_field_realm_id_name_key" ON "custom_profile_field"("realm_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "custom_profile_field_value_user_profile_id_field_id_key" ON "custom_profile_field_value"("user_profile_id", "field_id");

-- CreateIndex
CREATE UNIQUE INDEX "multiuse_invite_confirmation_key_key" ON "multiuse_invite"("confirmation_key");

-- CreateIndex
CREATE UNIQUE INDEX "attachment_path_id_key" ON "attachment"("path_id");

-- CreateIndex
CREATE INDEX "attachment_owner_id_idx" ON "attachment"("owner_id");

-- CreateIndex
CREATE INDEX "attachment_realm_id_create_time_idx" ON "attachment"("realm_id", "create_time");

-- CreateIndex
CREATE INDEX "attachment_message_message_id_idx" ON "attachment_message"("message_id");

-- CreateIndex
CREATE INDEX "event_outbox_created_at_idx" ON "event_outbox"("created_at");

-- AddForeignKey
ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_bot_owner_id_fkey" FOREIGN KEY ("bot_owner_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_presence" ADD CONSTRAINT "user_presence_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_user_group_id_fkey" FOREIGN KEY ("user_group_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_group_membership" ADD CONSTRAINT "group_group_membership_supergroup_id_fkey" FOREIGN KEY ("supergroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_group_membership" ADD CONSTRAINT "group_group_membership_subgroup_id_fkey" FOREIGN KEY ("subgroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_setting" ADD CONSTRAINT "group_setting_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_setting" ADD CONSTRAINT "group_setting_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel_folder" ADD CONSTRAINT "channel_folder_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stream" ADD CONSTRAINT "stream_folder_id_fkey" FOREIGN KEY ("folder_id") REFERENCES "channel_folder"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_stream_id_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_stream_id_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reaction" ADD CONSTRAINT "reaction_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "draft" ADD CONSTRAINT "draft_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_stream_id_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "navigation_view" ADD CONSTRAINT "navigation_view_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "push_device_token" ADD CONSTRAINT "push_device_token_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "linkifier" ADD CONSTRAINT "linkifier_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field" ADD CONSTRAINT "custom_profile_field_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_field_id_fkey" FOREIGN KEY ("field_id") REFERENCES "custom_profile_field"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "multiuse_invite" ADD CONSTRAINT "multiuse_invite_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "multiuse_invite" ADD CONSTRAINT "multiuse_invite_referred_by_id_fkey" FOREIGN KEY ("referred_by_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment_message" ADD CONSTRAINT "attachment_message_attachment_id_fkey" FOREIGN KEY ("attachment_id") REFERENCES "attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment_message" ADD CONSTRAINT "attachment_message_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

