// Shared by the verify-action suites: the register arguments whose event shapes differ, the
// stack and users most suites start from, and helpers for set-up requests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { startStack, type ServiceName, type Stack, type TestUser } from '@teamchat/stack';
import type { ApiClient, ApiResponse } from '@teamchat/testing';
import { WEB_APP_REGISTER_PARAMS, type RegisterArguments } from '@teamchat/testing';

/**
 * Each case runs under these: Zulip's web app (its home page's register arguments, every
 * capability) and an old client that sends none (events then come in their older shapes:
 * update_display_settings, delete_message per message, avatar URLs always sent, ...).
 */
export const CAPABILITY_SETS: [string, RegisterArguments][] = [
  ['web app', WEB_APP_REGISTER_PARAMS],
  ['old client', {}],
];

/** The web app's arguments with subscriber lists, which peer events keep current. */
export const WITH_SUBSCRIBERS: [string, RegisterArguments] = [
  'web app + subscribers',
  { ...WEB_APP_REGISTER_PARAMS, include_subscribers: true },
];

/** The body of a set-up request that must succeed. */
export function ok(response: ApiResponse): Record<string, any> {
  if (response.status !== 200)
    throw new Error(`set-up request failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as Record<string, any>;
}

/** A suite's stack, its owner `me` and `other`, both subscribed to `general`, and that channel's id. */
export interface SuiteStack {
  stack: Stack;
  me: TestUser;
  other: TestUser;
  generalId: number;
}

/** Starts `services` (with "uploads", files go to a fresh temporary directory) and the suite's users. */
export async function startSuiteStack(services: ServiceName[]): Promise<SuiteStack> {
  const env = services.includes('uploads')
    ? {
        UPLOADS_STORAGE: 'local',
        UPLOADS_LOCAL_DIR: await fs.promises.mkdtemp(path.join(os.tmpdir(), 'teamchat-verify-uploads-')),
      }
    : {};
  const stack = await startStack({ services, env });
  const me = await stack.createUser({ fullName: 'Me Myself', role: Role.OWNER });
  const other = await stack.createUser({ fullName: 'Other Person' });
  ok(
    await me.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [me.id, other.id],
    }),
  );
  const generalId = ok(await me.client.get('/api/v1/get_stream_id', { stream: 'general' })).stream_id as number;
  return { stack, me, other, generalId };
}

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** POSTs `file` as the multipart part named "file", after the text `fields`. */
export async function postFile(
  client: ApiClient,
  url: string,
  file: { name: string; type: string; content: Buffer | string },
  fields: Record<string, string> = {},
): Promise<ApiResponse> {
  const form = new FormData();
  for (const [field, value] of Object.entries(fields)) form.append(field, value);
  form.append('file', new Blob([file.content], { type: file.type }), file.name);
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  const body = Buffer.from(await request.arrayBuffer());
  return client.post(url, {}, { body, headers: { 'content-type': request.headers.get('content-type')! } });
}

/** POSTs a 1x1 PNG as the part named "file" (an avatar, an emoji, an icon, a logo). */
export function postImage(client: ApiClient, url: string, fields: Record<string, string> = {}): Promise<ApiResponse> {
  return postFile(client, url, { name: 'img.png', type: 'image/png', content: PNG }, fields);
}
