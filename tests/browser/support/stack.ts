// The stack a browser test runs against: every service (the web service serves the pages and
// Zulip's built web app from ZULIP_WEB_DIR), an administrator and a member who log in with
// passwords, two channels with a few messages each.
import fs from 'node:fs';
import path from 'node:path';
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';

/** ZULIP_WEB_DIR, else the shared build beside the checkout (../shared/zulip-web). */
export function zulipWebDir(): string {
  const dir = process.env.ZULIP_WEB_DIR ?? path.resolve(__dirname, '..', '..', '..', '..', 'shared', 'zulip-web');
  if (!fs.existsSync(path.join(dir, 'webpack-stats-production.json')))
    throw new Error(`Zulip's built web app is not at ${dir}: set ZULIP_WEB_DIR (docs: tests/README.md, "Browser")`);
  return dir;
}

export interface WebUser extends TestUser {
  password: string;
  fullName: string;
}

export interface WebStack {
  stack: Stack;
  admin: WebUser;
  member: WebUser;
  channels: { general: number; design: number };
}

export async function startWebStack(): Promise<WebStack> {
  const stack = await startStack({
    services: ['messages', 'channels', 'uploads', 'events', 'worker', 'web'],
    // No Gravatar: the test machine has no network beyond localhost (the server's default avatar instead).
    env: { ZULIP_WEB_DIR: zulipWebDir(), ENABLE_GRAVATAR: 'false' },
  });
  const user = async (email: string, fullName: string, role: number): Promise<WebUser> => {
    const password = `${email.split('@')[0]}-Pass-2026!`;
    // UTC like the browsers (timezoneId), so the app does not offer to change the profile's time zone.
    const created = await stack.createUser({ email, fullName, role, password, timezone: 'UTC' });
    return { ...created, password, fullName };
  };
  const admin = await user('ada@example.com', 'Ada Admin', Role.ADMINISTRATOR);
  const member = await user('max@example.com', 'Max Member', Role.MEMBER);
  const channels = { general: 0, design: 0 };
  for (const name of ['general', 'design'] as const) {
    const created = await admin.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name, description: `The ${name} channel` }],
      principals: [admin.id, member.id],
    });
    if (created.status !== 200) throw new Error(`creating #${name}: ${created.status} ${JSON.stringify(created.body)}`);
    const found = await admin.client.get('/api/v1/get_stream_id', { stream: name });
    channels[name] = found.body.stream_id;
  }
  for (const [to, topic, content] of [
    ['general', 'greetings', 'Welcome to the team!'],
    ['general', 'plans', 'What are we building this week?'],
    ['design', 'logo', 'The new logo draft is ready.'],
  ]) {
    const sent = await admin.client.post('/api/v1/messages', { type: 'stream', to, topic, content });
    if (sent.status !== 200) throw new Error(`sending to #${to}: ${sent.status} ${JSON.stringify(sent.body)}`);
  }
  return { stack, admin, member, channels };
}
