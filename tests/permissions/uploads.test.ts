// Permission matrix: uploaded files. A file is served only to its uploader and to those who can
// read a message linking it; everyone else gets no bytes. A guessed path gets the same answer as
// a file that was deleted. Attachments are deleted only by their owner.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JOB_QUEUES } from '@teamchat/bus';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { type ApiResponse } from '@teamchat/testing';
import {
  createCast,
  everyone,
  matrix,
  only,
  refused,
  SERVED,
  type Cast,
  type Outcome,
  type Refusal,
  type RoleName,
} from './matrix';

let stack: Stack;
let cast: Cast;
let uploadsDir: string;
const theCast = () => cast;

beforeAll(async () => {
  uploadsDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-permissions-'));
  stack = await startStack({
    services: ['messages', 'channels', 'uploads'],
    env: { UPLOADS_STORAGE: 'local', UPLOADS_LOCAL_DIR: uploadsDir },
  });
  cast = await createCast(stack);
});
afterAll(async () => {
  await stack.deps.jobs.queue(JOB_QUEUES.uploadsCleanup).obliterate({ force: true });
  await stack.close();
  await fs.promises.rm(uploadsDir, { recursive: true, force: true });
});

const NOT_AUTHORIZED = refused('You are not authorized to view this file.', 'BAD_REQUEST', 403);
const NOT_FOUND = refused('This file does not exist or has been deleted.', 'BAD_REQUEST', 404);

let counter = 0;

/** A row of file downloads: `allowed` roles get the bytes. */
const served = (allowed: RoleName[], refusal: Refusal, overrides: Partial<Record<RoleName, Outcome>> = {}) =>
  only(allowed, refusal, overrides, SERVED);

/** Uploads a file as `user`; its URL, attachment id and (unique) content. */
async function upload(user: TestUser): Promise<{ url: string; id: number; content: string }> {
  const content = `secret bytes ${++counter} ${Math.random()}`;
  const form = new FormData();
  form.append('file', new Blob([content]), `file-${counter}.txt`);
  const encoded = new Request('http://multipart.invalid', { method: 'POST', body: form });
  const response = await user.client.post(
    '/api/v1/user_uploads',
    {},
    {
      body: Buffer.from(await encoded.arrayBuffer()),
      headers: { 'content-type': encoded.headers.get('content-type')! },
    },
  );
  if (response.status !== 200) throw new Error(`upload failed: ${JSON.stringify(response.body)}`);
  const attachments = (await user.client.get('/api/v1/attachments')).body.attachments as {
    id: number;
    path_id: string;
  }[];
  const attachment = attachments.find((entry) => `/user_uploads/${entry.path_id}` === response.body.url)!;
  return { url: response.body.url, id: attachment.id, content };
}

async function channel(options: { private?: boolean; subscribers: TestUser[] }) {
  return stack.createStream({
    name: `files-${++counter}`,
    creatorId: cast.owner.id,
    inviteOnly: options.private ?? false,
    subscribers: options.subscribers.map((user) => user.id),
  });
}

/** Shares the file in a message sent through the API (the messages service links it). */
async function share(sender: TestUser, file: { url: string }, to: { streamId?: number; userIds?: number[] }) {
  const params = to.streamId
    ? { type: 'stream', to: to.streamId, topic: 'files', content: `[file](${file.url})` }
    : { type: 'direct', to: to.userIds!, content: `[file](${file.url})` };
  const response = await sender.client.post('/api/v1/messages', params);
  if (response.status !== 200) throw new Error(`send failed: ${JSON.stringify(response.body)}`);
}

const fetchFile = (actor: TestUser, url: string) => actor.client.get(url, {}, { validate: false });

/** Served: the bytes; refused: none of them. */
const checkBytes = async (file: { content: string }, allowed: boolean, _actor: TestUser, response: ApiResponse) => {
  if (allowed) expect(response.raw.toString()).toBe(file.content);
  else expect(response.raw.toString()).not.toContain(file.content);
};

describe('GET /user_uploads/{path}', () => {
  matrix('a file nobody shared (the member uploaded it)', theCast, {
    setup: () => upload(cast.member),
    act: (actor, file) => fetchFile(actor, file.url),
    verify: checkBytes,
    expect: served(['member'], NOT_AUTHORIZED),
  });

  matrix('the same through /user_uploads/download/', theCast, {
    setup: () => upload(cast.member),
    act: (actor, file) => fetchFile(actor, file.url.replace('/user_uploads/', '/user_uploads/download/')),
    verify: checkBytes,
    expect: served(['member'], NOT_AUTHORIZED),
  });

  matrix('a file shared in a public channel only the member is subscribed to', theCast, {
    setup: async () => {
      const file = await upload(cast.member);
      await share(cast.member, file, { streamId: (await channel({ subscribers: [cast.member] })).id });
      return file;
    },
    act: (actor, file) => fetchFile(actor, file.url),
    verify: checkBytes,
    // Every non-guest can read a public channel; a guest outside it cannot.
    expect: served(['owner', 'administrator', 'moderator', 'member', 'bot'], NOT_AUTHORIZED),
  });

  matrix('a file shared in a private channel of the owner and the member', theCast, {
    setup: async () => {
      const file = await upload(cast.member);
      await share(cast.member, file, {
        streamId: (await channel({ private: true, subscribers: [cast.owner, cast.member] })).id,
      });
      return file;
    },
    act: (actor, file) => fetchFile(actor, file.url),
    verify: checkBytes,
    // The bot's owner (the member) is subscribed, but a file is served by the bot's own access.
    expect: served(['owner', 'member'], NOT_AUTHORIZED),
  });

  matrix('a file shared in a direct message from the member to the guest', theCast, {
    setup: async () => {
      const file = await upload(cast.member);
      await share(cast.member, file, { userIds: [cast.guest.id] });
      return file;
    },
    act: (actor, file) => fetchFile(actor, file.url),
    verify: checkBytes,
    expect: served(['member', 'guest'], NOT_AUTHORIZED),
  });

  matrix('a file whose attachment was deleted', theCast, {
    setup: async () => {
      const file = await upload(cast.member);
      expect((await cast.member.client.delete(`/api/v1/attachments/${file.id}`)).status).toBe(200);
      return file;
    },
    act: (actor, file) => fetchFile(actor, file.url),
    verify: checkBytes,
    expect: only([], NOT_FOUND),
  });

  // A guessed path — a real file's path with one character changed, another realm id, or
  // traversal — gets exactly the deleted file's answer.
  for (const [name, mangle] of [
    [
      'a guessed path (one character of the random part changed)',
      (url: string) => {
        const segments = url.split('/');
        const random = segments[segments.length - 2];
        segments[segments.length - 2] = (random[0] === 'a' ? 'b' : 'a') + random.slice(1);
        return segments.join('/');
      },
    ],
    [
      'the path under another realm id',
      (url: string) => url.replace(/^\/user_uploads\/\d+\//, `/user_uploads/${2_000_000}/`),
    ],
    ['a traversal of the path', (url: string) => url.replace(/\/[^/]+$/, '/..%2F..%2F..%2Fetc%2Fpasswd')],
    ['the path with another file name', (url: string) => url.replace(/\/[^/]+$/, '/other.txt')],
  ] as const) {
    matrix(name, theCast, {
      setup: () => upload(cast.member),
      act: (actor, file) => fetchFile(actor, mangle(file.url)),
      verify: checkBytes,
      expect: only([], NOT_FOUND),
    });
  }

  test('without credentials: 401, no bytes', async () => {
    const file = await upload(cast.member);
    const response = await stack.anonymous().get(file.url, {}, { validate: false });
    expect(response.status).toBe(401);
    expect(response.raw.toString()).not.toContain(file.content);
  });
});

describe('DELETE /attachments/{id}', () => {
  matrix("the member's attachment", theCast, {
    setup: () => upload(cast.member),
    act: (actor, file) => actor.client.delete(`/api/v1/attachments/${file.id}`),
    verify: async (file, allowed) =>
      expect(await stack.db.attachment.count({ where: { id: file.id } })).toBe(allowed ? 0 : 1),
    // Only its owner, whatever their role; to anyone else it does not exist.
    expect: only(['member'], refused('Invalid attachment')),
  });

  matrix('GET /attachments lists only one’s own', theCast, {
    setup: () => upload(cast.member),
    act: (actor) => actor.client.get('/api/v1/attachments'),
    verify: async (file, _allowed, actor, response) => {
      const ids = (response.body.attachments as { id: number }[]).map((entry) => entry.id);
      expect(ids.includes(file.id)).toBe(actor.id === cast.member.id);
    },
    expect: everyone(),
  });
});
