// The worker's uploads-cleanup job: uploads left unlinked by deleted messages, and the
// scheduled removal of old unlinked uploads.
import { JOB_QUEUES } from '@teamchat/bus';
import type { TestUser } from '@teamchat/stack';
import { captureEvents, ofType, waitFor } from '@teamchat/testing';
import { uploadKeys } from '@teamchat/storage';
import {
  linkFromMessage,
  startUploadsStack,
  STORE_KINDS,
  uploadLikePythonZulipApi,
  type UploadsStack,
} from './helpers';

const WEEK_MS = 7 * 24 * 3600 * 1000;

describe.each(STORE_KINDS)('uploads clean-up (%s storage)', (kind) => {
  let uploads: UploadsStack;
  let owner: TestUser;
  let friend: TestUser;

  beforeAll(async () => {
    uploads = await startUploadsStack(kind, {
      env: { UPLOADS_DELETE_UNREFERENCED_AFTER_WEEKS: '2', UPLOADS_CLEANUP_EVERY_MS: '300' },
      services: ['worker'],
      exportEnv: true,
    });
    owner = await uploads.stack.createUser({ fullName: 'Owner' });
    friend = await uploads.stack.createUser({ fullName: 'Friend' });
  });
  afterAll(async () => {
    await uploads.close();
  });

  async function uploadAs(user: TestUser, name: string) {
    const response = await uploadLikePythonZulipApi(user, `/tmp/${name}`, `content of ${name}`);
    expect(response.status).toBe(200);
    const pathId = response.body.url.slice('/user_uploads/'.length) as string;
    return uploads.stack.db.attachment.findUniqueOrThrow({ where: { path_id: pathId } });
  }

  async function isStored(pathId: string) {
    return (await uploads.storage.head(pathId)) !== null;
  }

  test('after messages are deleted, their uploads go unless another message still links them', async () => {
    const orphaned = await uploadAs(owner, 'orphaned.txt');
    const stillLinked = await uploadAs(owner, 'still-linked.txt');
    const never = await uploadAs(owner, 'never-linked.txt');
    const deletedMessage = await linkFromMessage(uploads.stack, {
      senderId: owner.id,
      attachmentIds: [orphaned.id, stillLinked.id],
      recipients: [friend.id],
    });
    await linkFromMessage(uploads.stack, {
      senderId: friend.id,
      attachmentIds: [stillLinked.id],
      recipients: [owner.id],
    });
    await uploads.stack.db.message.delete({ where: { id: deletedMessage } });
    const captured = await captureEvents(uploads.stack, async () => {
      // What the messages service does after deleting messages (see attachmentsOrphanedBy).
      const done = await uploads.stack.deps.jobs.runWithBudget(
        JOB_QUEUES.uploadsCleanup,
        `test-${kind}-1`,
        { attachmentIds: [orphaned.id, stillLinked.id] },
        20_000,
      );
      expect(done).toBe(true);

      expect(await uploads.stack.db.attachment.findUnique({ where: { id: orphaned.id } })).toBeNull();
      for (const key of uploadKeys(uploads.storage, orphaned.path_id))
        expect(await uploads.storage.head(key)).toBeNull();
      expect(await uploads.stack.db.attachment.findUnique({ where: { id: stillLinked.id } })).not.toBeNull();
      expect(await isStored(stillLinked.path_id)).toBe(true);
      // Not named in the job: untouched, however unlinked.
      expect(await isStored(never.path_id)).toBe(true);
    });

    const used = await uploads.stack.db.attachment.aggregate({
      where: { realm_id: uploads.stack.realm.id },
      _sum: { size: true },
    });
    expect(ofType(captured, 'attachment')).toEqual([
      {
        event: {
          type: 'attachment',
          op: 'remove',
          attachment: { id: orphaned.id },
          upload_space_used: Number(used._sum.size),
        },
        recipientIds: [owner.id],
      },
    ]);
  });

  test('the scheduled run removes unlinked uploads older than the configured weeks, and only those', async () => {
    const old = await uploadAs(owner, 'old-unlinked.txt');
    const oldLinked = await uploadAs(owner, 'old-linked.txt');
    const recent = await uploadAs(friend, 'recent.txt');
    await linkFromMessage(uploads.stack, {
      senderId: owner.id,
      attachmentIds: [oldLinked.id],
      recipients: [friend.id],
    });
    const threeWeeksAgo = new Date(Date.now() - 3 * WEEK_MS);
    await uploads.stack.db.attachment.updateMany({
      where: { id: { in: [old.id, oldLinked.id] } },
      data: { create_time: threeWeeksAgo },
    });
    const oneWeekAgo = new Date(Date.now() - WEEK_MS);
    await uploads.stack.db.attachment.update({ where: { id: recent.id }, data: { create_time: oneWeekAgo } });

    // The uploads service registered the schedule at boot (every 300 ms in this test).
    const schedulers = await uploads.stack.deps.jobs.queue(JOB_QUEUES.uploadsCleanup).getJobSchedulers();
    expect(schedulers.map((s) => [s.key, s.every, s.template?.data])).toEqual([
      ['delete-unreferenced-uploads', 300, { unreferencedOlderThanWeeks: 2 }],
    ]);

    await waitFor(async () => (await uploads.stack.db.attachment.findUnique({ where: { id: old.id } })) === null, {
      what: 'the scheduled clean-up',
    });
    await waitFor(async () => !(await isStored(old.path_id)), { what: 'the old upload to leave storage' });
    expect(await uploads.stack.db.attachment.findUnique({ where: { id: oldLinked.id } })).not.toBeNull();
    expect(await isStored(oldLinked.path_id)).toBe(true);
    expect(await uploads.stack.db.attachment.findUnique({ where: { id: recent.id } })).not.toBeNull();
    expect(await isStored(recent.path_id)).toBe(true);
  });
});
