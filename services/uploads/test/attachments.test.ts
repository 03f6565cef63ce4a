// GET /api/v1/attachments and DELETE /api/v1/attachments/{id}.
import { type TestUser } from '@teamchat/stack';
import { captureEvents, expectError, ofType } from '@teamchat/testing';
import { uploadKeys } from '@teamchat/storage';
import {
  linkFromMessage,
  startUploadsStack,
  STORE_KINDS,
  storedFiles,
  uploadLikePythonZulipApi,
  type UploadsStack,
} from './helpers';

describe.each(STORE_KINDS)('attachments (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;
  let other: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind);
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
    other = await uploads.stack.createUser({ fullName: 'Other' });
  });
  afterAll(async () => {
    await uploads.close();
  });

  async function uploadAs(user: TestUser, name: string, content: string) {
    const response = await uploadLikePythonZulipApi(user, `/tmp/${name}`, content);
    expect(response.status).toBe(200);
    const pathId = response.body.url.slice('/user_uploads/'.length) as string;
    const row = await uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
    return { pathId, row, url: response.body.url as string };
  }

  test("lists the caller's uploads with the messages linking them and the realm's space used", async () => {
    const first = await uploadAs(owner, 'first.txt', 'one');
    const second = await uploadAs(owner, 'second.txt', 'second');
    const theirs = await uploadAs(other, 'theirs.txt', 'not listed for owner');
    const messageA = await linkFromMessage(uploads.stack, {
      senderId: owner.id,
      attachmentIds: [first.row.id],
      recipients: [other.id],
    });
    const messageB = await linkFromMessage(uploads.stack, {
      senderId: other.id,
      attachmentIds: [first.row.id],
      recipients: [owner.id],
    });
    const dates = await uploads.stack.db.message.findMany({
      where: { id: { in: [messageA, messageB] } },
      orderBy: { id: 'asc' },
    });

    const response = await owner.client.get('/api/v1/attachments');
    expect(response.status).toBe(200);
    const mine = response.body.attachments.filter((a: { id: number }) => [first.row.id, second.row.id].includes(a.id));
    expect(mine).toEqual([
      {
        id: first.row.id,
        name: 'first.txt',
        path_id: first.pathId,
        size: 3,
        create_time: first.row.create_time.getTime(),
        messages: dates.map((m) => ({ id: m.id, date_sent: m.date_sent.getTime() })),
      },
      {
        id: second.row.id,
        name: 'second.txt',
        path_id: second.pathId,
        size: 6,
        create_time: second.row.create_time.getTime(),
        messages: [],
      },
    ]);
    const ownIds = (
      await uploads.stack.db.attachment.findMany({ where: { owner_id: owner.id }, orderBy: { id: 'asc' } })
    ).map((a) => a.id);
    expect(response.body.attachments.map((a: { id: number }) => a.id)).toEqual(ownIds);
    expect(ownIds).not.toContain(theirs.row.id);
    const total = await uploads.stack.db.attachment.aggregate({
      where: { realm_id: uploads.stack.realm.id },
      _sum: { size: true },
    });
    expect(response.body.upload_space_used).toBe(Number(total._sum.size));
  });

  test('deleting an upload removes its record, its links and its bytes, and tells the owner', async () => {
    const target = await uploadAs(owner, 'delete-me.txt', 'bye');
    await linkFromMessage(uploads.stack, {
      senderId: owner.id,
      attachmentIds: [target.row.id],
      recipients: [other.id],
    });
    const captured = await captureEvents(uploads.stack, async () => {
      const response = await owner.client.delete(`/api/v1/attachments/${target.row.id}`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ result: 'success', msg: '' });
      expect(await uploads.stack.db.attachment.findUnique({ where: { id: target.row.id } })).toBeNull();
      expect(await uploads.stack.db.attachmentMessage.count({ where: { attachment_id: target.row.id } })).toBe(0);
      for (const key of uploadKeys(uploads.storage, target.pathId)) expect(await uploads.storage.head(key)).toBeNull();
    });
    const total = await uploads.stack.db.attachment.aggregate({
      where: { realm_id: uploads.stack.realm.id },
      _sum: { size: true },
    });
    expect(ofType(captured, 'attachment')).toEqual([
      {
        event: {
          type: 'attachment',
          op: 'remove',
          attachment: { id: target.row.id },
          upload_space_used: Number(total._sum.size ?? 0),
        },
        recipientIds: [owner.id],
      },
    ]);
    expectError(
      await owner.client.get(target.url, {}, { validate: false }),
      404,
      'BAD_REQUEST',
      'This file does not exist or has been deleted.',
    );
  });

  test("unknown ids and other users' uploads: Invalid attachment, and nothing changes", async () => {
    const theirs = await uploadAs(other, 'keep.txt', 'keep');
    const captured = await captureEvents(uploads.stack, async () => {
      const before = storedFiles(uploads);
      expectError(
        await owner.client.delete(`/api/v1/attachments/${theirs.row.id}`),
        400,
        'BAD_REQUEST',
        'Invalid attachment',
      );
      expectError(await owner.client.delete('/api/v1/attachments/999999999'), 400, 'BAD_REQUEST', 'Invalid attachment');
      expect(await uploads.stack.db.attachment.findUnique({ where: { id: theirs.row.id } })).not.toBeNull();
      expect(storedFiles(uploads)).toEqual(before);
    });
    expect(ofType(captured, 'attachment')).toEqual([]);
    expectError(await owner.client.delete('/api/v1/attachments/abc'), 404, 'BAD_REQUEST');
  });

  test('needs authentication', async () => {
    expectError(await uploads.stack.anonymous().get('/api/v1/attachments'), 401, 'UNAUTHORIZED');
    expectError(
      await uploads.stack.anonymous().delete('/api/v1/attachments/1'),
      401,
      'UNAUTHORIZED',
      'Not logged in: API authentication or user session required',
    );
  });
});
