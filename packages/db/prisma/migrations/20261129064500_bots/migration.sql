-- Bots as Zulip keeps them: default channels of a bot, outgoing webhook services, bot
-- configuration data, and the sealed copy of a bot API key (docs/adr/0007).
ALTER TABLE "user_profile" ADD COLUMN "default_sending_stream_id" INTEGER,
ADD COLUMN "default_events_register_stream_id" INTEGER,
ADD COLUMN "default_all_public_streams" BOOLEAN NOT NULL DEFAULT false;

ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_default_sending_stream_id_fkey" FOREIGN KEY ("default_sending_stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;

ALTER TABLE "user_profile" ADD CONSTRAINT "user_profile_default_events_register_stream_id_fkey" FOREIGN KEY ("default_events_register_stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;

ALTER TABLE "api_key" ADD COLUMN "sealed_key" TEXT;

CREATE TABLE "service" (
    "id" SERIAL NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "base_url" TEXT NOT NULL,
    "sealed_token" TEXT NOT NULL,
    "interface" SMALLINT NOT NULL DEFAULT 1,

    CONSTRAINT "service_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "service_user_profile_id_idx" ON "service"("user_profile_id");

ALTER TABLE "service" ADD CONSTRAINT "service_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "bot_config_data" (
    "id" SERIAL NOT NULL,
    "bot_profile_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "bot_config_data_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "bot_config_data_bot_profile_id_key_key" ON "bot_config_data"("bot_profile_id", "key");

ALTER TABLE "bot_config_data" ADD CONSTRAINT "bot_config_data_bot_profile_id_fkey" FOREIGN KEY ("bot_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
