-- AlterTable
ALTER TABLE "realm" ADD COLUMN     "user_settings_defaults" JSONB NOT NULL DEFAULT '{}';

-- CreateTable
CREATE TABLE "user_status" (
    "user_profile_id" INTEGER NOT NULL,
    "status_text" TEXT NOT NULL DEFAULT '',
    "emoji_name" TEXT NOT NULL DEFAULT '',
    "emoji_code" TEXT NOT NULL DEFAULT '',
    "reaction_type" TEXT NOT NULL DEFAULT 'unicode_emoji',
    "timestamp" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_status_pkey" PRIMARY KEY ("user_profile_id")
);

-- CreateTable
CREATE TABLE "muted_user" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "muted_user_id" INTEGER NOT NULL,
    "date_muted" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "muted_user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "saved_snippet" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "title" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "saved_snippet_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "realm_playground" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "pygments_language" TEXT NOT NULL,
    "url_template" TEXT NOT NULL,

    CONSTRAINT "realm_playground_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "realm_emoji" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "author_id" INTEGER,
    "name" TEXT NOT NULL,
    "file_name" TEXT NOT NULL,
    "still_file_name" TEXT,
    "is_animated" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "realm_emoji_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "scheduled_message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "stream_id" INTEGER,
    "to" INTEGER[],
    "topic" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "rendered_content" TEXT NOT NULL DEFAULT '',
    "scheduled_timestamp" TIMESTAMPTZ(6) NOT NULL,
    "delivery_type" INTEGER NOT NULL DEFAULT 1,
    "delivered" BOOLEAN NOT NULL DEFAULT false,
    "delivered_message_id" INTEGER,
    "failed" BOOLEAN NOT NULL DEFAULT false,
    "failure_message" TEXT,
    "read_by_sender" BOOLEAN,
    "sending_client" TEXT NOT NULL DEFAULT '',
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scheduled_message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "realm_export" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "acting_user_id" INTEGER,
    "type" INTEGER NOT NULL DEFAULT 1,
    "status" INTEGER NOT NULL DEFAULT 0,
    "date_requested" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "date_started" TIMESTAMPTZ(6),
    "date_succeeded" TIMESTAMPTZ(6),
    "date_failed" TIMESTAMPTZ(6),
    "date_deleted" TIMESTAMPTZ(6),
    "export_path" TEXT,
    "sha256sum_hex" TEXT,
    "tarball_size_bytes" BIGINT,
    "stats" JSONB,

    CONSTRAINT "realm_export_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "preregistration_user" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "referred_by_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "invited_as" INTEGER NOT NULL DEFAULT 400,
    "invited_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiry_date" TIMESTAMPTZ(6),
    "status" INTEGER NOT NULL DEFAULT 0,
    "include_realm_default_subscriptions" BOOLEAN NOT NULL DEFAULT false,
    "notify_referrer_on_join" BOOLEAN NOT NULL DEFAULT true,
    "welcome_message_custom_text" TEXT,
    "stream_ids" INTEGER[],
    "group_ids" INTEGER[],
    "confirmation_key" TEXT NOT NULL,

    CONSTRAINT "preregistration_user_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "muted_user_muted_user_id_idx" ON "muted_user"("muted_user_id");

-- CreateIndex
CREATE UNIQUE INDEX "muted_user_user_profile_id_muted_user_id_key" ON "muted_user"("user_profile_id", "muted_user_id");

-- CreateIndex
CREATE INDEX "saved_snippet_user_profile_id_idx" ON "saved_snippet"("user_profile_id");

-- CreateIndex
CREATE UNIQUE INDEX "realm_playground_realm_id_pygments_language_name_key" ON "realm_playground"("realm_id", "pygments_language", "name");

-- CreateIndex
CREATE INDEX "realm_emoji_realm_id_name_idx" ON "realm_emoji"("realm_id", "name");

-- CreateIndex
CREATE INDEX "scheduled_message_sender_id_delivered_idx" ON "scheduled_message"("sender_id", "delivered");

-- CreateIndex
CREATE INDEX "scheduled_message_scheduled_timestamp_delivered_idx" ON "scheduled_message"("scheduled_timestamp", "delivered");

-- CreateIndex
CREATE INDEX "realm_export_realm_id_idx" ON "realm_export"("realm_id");

-- CreateIndex
CREATE UNIQUE INDEX "preregistration_user_confirmation_key_key" ON "preregistration_user"("confirmation_key");

-- CreateIndex
CREATE INDEX "preregistration_user_realm_id_email_idx" ON "preregistration_user"("realm_id", "email");

-- AddForeignKey
ALTER TABLE "user_status" ADD CONSTRAINT "user_status_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_muted_user_id_fkey" FOREIGN KEY ("muted_user_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "saved_snippet" ADD CONSTRAINT "saved_snippet_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "saved_snippet" ADD CONSTRAINT "saved_snippet_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_playground" ADD CONSTRAINT "realm_playground_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "scheduled_message" ADD CONSTRAINT "scheduled_message_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "scheduled_message" ADD CONSTRAINT "scheduled_message_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_acting_user_id_fkey" FOREIGN KEY ("acting_user_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "preregistration_user" ADD CONSTRAINT "preregistration_user_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "preregistration_user" ADD CONSTRAINT "preregistration_user_referred_by_id_fkey" FOREIGN KEY ("referred_by_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

