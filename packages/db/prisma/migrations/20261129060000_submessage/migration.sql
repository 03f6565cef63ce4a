-- Widgets (polls, to-do lists): a message whose content is a widget command gets its first
-- submessage when it is sent, and each vote, option or task adds one (POST /submessage). The
-- messages service writes them. They are read by message, in id order, with every fetch of
-- messages: hence the index. (No apostrophes or semicolons in these comments: the migration
-- runner splits statements on them.)
CREATE TABLE "submessage" (
    "id" SERIAL NOT NULL,
    "message_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "msg_type" TEXT NOT NULL,
    "content" TEXT NOT NULL,

    CONSTRAINT "submessage_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "submessage_message_id_id_idx" ON "submessage"("message_id", "id");

ALTER TABLE "submessage" ADD CONSTRAINT "submessage_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
