// Which messages link which uploads. Sending (or editing) a message claims the uploads it links;
// deleting messages may leave uploads that no message links any more, which the uploads
// clean-up job then removes from storage. Access to a message grants access to its uploads.

import type { Attachment, TxClient } from '@teamchat/db';
import { hasMessageAccess, type Viewer } from './streams';

/** What the attachment reads need: the tables of attachments and of message access. */
type AttachmentReader = Pick<
  TxClient,
  | '$queryRaw'
  | 'attachment'
  | 'attachmentMessage'
  | 'subscription'
  | 'stream'
  | 'groupSetting'
  | 'userMessage'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
  | 'userProfile'
>;

/** "/user_uploads/{realm_id}/{random}/{filename}" as it appears in message content. */
const UPLOAD_LINK = /\/user_uploads\/(\d+\/[A-Za-z0-9_-]+\/[^\s)\]"'<>?#]+)/g;

/** The upload path ids (`{realm_id}/{random}/{filename}`) linked from a message's content. */
export function linkedUploadPathIds(content: string): string[] {
  const ids = new Set<string>();
  for (const match of content.matchAll(UPLOAD_LINK)) {
    try {
      ids.add(decodeURIComponent(match[1]));
    } catch {
      ids.add(match[1]);
    }
  }
  return [...ids];
}

/**
 * Links the message to the uploads its content references that the sender may share: their
 * own uploads, or uploads they can open because they can read a message linking them (Zulip's
 * do_claim_attachments). Returns whether any upload was linked (the message's has_attachment).
 */
export async function claimAttachments(
  tx: AttachmentReader,
  message: { id: number; realm_id: number; sender_id: number; content: string },
): Promise<boolean> {
  const pathIds = linkedUploadPathIds(message.content);
  if (pathIds.length === 0) return false;
  const candidates = await tx.attachment.findMany({
    where: { realm_id: message.realm_id, path_id: { in: pathIds } },
    select: { id: true, owner_id: true, realm_id: true },
  });
  if (candidates.length === 0) return false;
  const sender = await tx.userProfile.findUnique({
    where: { id: message.sender_id },
    select: { id: true, realm_id: true, role: true },
  });
  if (!sender) return false;
  const claimable: number[] = [];
  for (const attachment of candidates) {
    if (await canAccessAttachment(tx, sender, attachment)) claimable.push(attachment.id);
  }
  if (claimable.length === 0) return false;
  await tx.attachmentMessage.createMany({
    data: claimable.map((attachmentId) => ({ attachment_id: attachmentId, message_id: message.id })),
    skipDuplicates: true,
  });
  return true;
}

/**
 * Call inside the transaction that deletes `messageIds`, BEFORE deleting them: the uploads that
 * only these messages link. Enqueue the uploads clean-up job for them after commit.
 */
export async function attachmentsOrphanedBy(tx: Pick<TxClient, '$queryRaw'>, messageIds: number[]): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const rows = await tx.$queryRaw<{ id: number }[]>`
    SELECT DISTINCT am.attachment_id AS id FROM attachment_message am
    WHERE am.message_id = ANY(${messageIds}::int[])
      AND NOT EXISTS (
        SELECT 1 FROM attachment_message other
        WHERE other.attachment_id = am.attachment_id AND other.message_id <> ALL(${messageIds}::int[])
      )`;
  return rows.map((row) => row.id);
}

/**
 * Whether the viewer may open the upload (Zulip's validate_attachment_request): its owner may,
 * and so may everyone who can read a message linking it.
 */
export async function canAccessAttachment(
  db: AttachmentReader,
  viewer: Viewer,
  attachment: Pick<Attachment, 'id' | 'owner_id' | 'realm_id'>,
): Promise<boolean> {
  if (attachment.realm_id !== viewer.realm_id) return false;
  if (attachment.owner_id === viewer.id) return true;
  const received = await db.$queryRaw<{ found: number }[]>`
    SELECT 1 AS found FROM attachment_message am
    JOIN user_message um ON um.message_id = am.message_id AND um.user_profile_id = ${viewer.id}
    WHERE am.attachment_id = ${attachment.id} LIMIT 1`;
  if (received.length > 0) return true;
  // Not received: channel access decides, once per channel the upload was shared in.
  const perChannel = await db.$queryRaw<{ id: number; stream_id: number }[]>`
    SELECT DISTINCT ON (m.stream_id) m.id, m.stream_id FROM attachment_message am
    JOIN message m ON m.id = am.message_id
    WHERE am.attachment_id = ${attachment.id} AND m.stream_id IS NOT NULL`;
  for (const message of perChannel) {
    if (
      await hasMessageAccess(db, viewer, {
        id: message.id,
        realm_id: attachment.realm_id,
        stream_id: message.stream_id,
      })
    )
      return true;
  }
  return false;
}

/** Zulip's Attachment.to_dict: the shape of GET /attachments and of `attachment` events. */
export interface AttachmentDict {
  id: number;
  name: string;
  path_id: string;
  size: number;
  /** Milliseconds since the epoch. */
  create_time: number;
  messages: { id: number; date_sent: number }[];
}

/** The attachments matching `where`, by id, each with the messages linking it. */
export async function attachmentDicts(
  db: Pick<TxClient, 'attachment'>,
  where: { ownerId?: number; ids?: number[] },
): Promise<AttachmentDict[]> {
  const rows = await db.attachment.findMany({
    where: { owner_id: where.ownerId, id: where.ids ? { in: where.ids } : undefined },
    orderBy: { id: 'asc' },
    select: {
      id: true,
      file_name: true,
      path_id: true,
      size: true,
      create_time: true,
      messages: { select: { message: { select: { id: true, date_sent: true } } }, orderBy: { message_id: 'asc' } },
    },
  });
  return rows.map((row) => ({
    id: row.id,
    name: row.file_name,
    path_id: row.path_id,
    size: Number(row.size),
    create_time: row.create_time.getTime(),
    messages: row.messages.map(({ message }) => ({ id: message.id, date_sent: message.date_sent.getTime() })),
  }));
}

/** Bytes taken by every upload of the realm (Zulip's currently_used_upload_space_bytes). */
export async function uploadSpaceUsed(db: Pick<TxClient, '$queryRaw'>, realmId: number): Promise<number> {
  const [row] = await db.$queryRaw<
    { used: bigint }[]
  >`SELECT COALESCE(SUM(size), 0)::bigint AS used FROM attachment WHERE realm_id = ${realmId}`;
  return Number(row.used);
}

/** The `attachment` event for the owner's clients: add/update carry the dict, remove only the id. */
export function attachmentEvent(
  op: 'add' | 'update',
  attachment: AttachmentDict,
  uploadSpaceUsedBytes: number,
): { type: 'attachment'; op: 'add' | 'update'; attachment: AttachmentDict; upload_space_used: number };
export function attachmentEvent(
  op: 'remove',
  attachment: { id: number },
  uploadSpaceUsedBytes: number,
): { type: 'attachment'; op: 'remove'; attachment: { id: number }; upload_space_used: number };
export function attachmentEvent(
  op: 'add' | 'update' | 'remove',
  attachment: AttachmentDict | { id: number },
  uploadSpaceUsedBytes: number,
) {
  return {
    type: 'attachment' as const,
    op,
    attachment: op === 'remove' ? { id: attachment.id } : attachment,
    upload_space_used: uploadSpaceUsedBytes,
  };
}
