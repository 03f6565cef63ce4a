-- Alert words (Zulip's AlertWord), written by the users service. A word is unique per user
-- case-insensitively, as Zulip's add_user_alert_words keeps it.
CREATE TABLE "alert_word" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "word" TEXT NOT NULL,

    CONSTRAINT "alert_word_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "alert_word_user_profile_id_idx" ON "alert_word"("user_profile_id");
CREATE INDEX "alert_word_realm_id_idx" ON "alert_word"("realm_id");
CREATE UNIQUE INDEX "alert_word_user_profile_id_lower_word_key" ON "alert_word"("user_profile_id", lower("word"));

ALTER TABLE "alert_word" ADD CONSTRAINT "alert_word_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
