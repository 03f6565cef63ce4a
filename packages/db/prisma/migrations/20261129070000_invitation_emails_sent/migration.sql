-- Invitation emails an organisation sent, resends included (Zulip's invites_sent::day count):
-- the daily invitation cap counts these, not the invitations recorded.
CREATE TABLE "invitation_email_sent" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sent_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "count" INTEGER NOT NULL,

    CONSTRAINT "invitation_email_sent_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "invitation_email_sent_realm_id_sent_at_idx" ON "invitation_email_sent"("realm_id", "sent_at");

ALTER TABLE "invitation_email_sent" ADD CONSTRAINT "invitation_email_sent_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Invitations recorded before this table counted as sent when they were.
INSERT INTO "invitation_email_sent" ("realm_id", "sent_at", "count")
SELECT "realm_id", "invited_at", 1 FROM "preregistration_user" WHERE "invited_at" > now() - interval '1 day';
