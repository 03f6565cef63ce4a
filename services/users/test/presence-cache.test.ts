// The users service answers presence pings from its copy of the realm's presence rows
// (lib/presence-cache.ts). What another process writes must be in the next answer, a write that
// commits a little after its own time too, and a deactivated user must leave the copy once the
// realm is read whole again (PRESENCE_RELOAD_SECONDS, 2 s here, waited past).
import { Role } from '@teamchat/domain';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { until } from '@teamchat/testing';
import { PRESENCE_LATE_COMMIT_MS } from '../src/lib/presence-cache';

const RELOAD_SECONDS = 2;

let stack: Stack;
let watcher: TestUser;
let admin: TestUser;
beforeAll(async () => {
  stack = await startStack({ env: { PRESENCE_RELOAD_SECONDS: String(RELOAD_SECONDS) } });
  watcher = await stack.createUser();
  admin = await stack.createUser({ role: Role.ADMINISTRATOR });
});
afterAll(() => stack.close());

const ping = (user: TestUser, fields: Record<string, unknown> = {}) =>
  user.client.post('/api/v1/users/me/presence', { status: 'active', slim_presence: true, ...fields });

/** A presence write made elsewhere (another users-service process), recording `at`. */
async function writtenElsewhere(user: TestUser, at: Date): Promise<void> {
  await stack.db.$executeRaw`
    INSERT INTO user_presence (user_profile_id, realm_id, last_connected_time, last_active_time)
    VALUES (${user.id}, ${stack.realm.id}, ${at}, ${at})
    ON CONFLICT (user_profile_id) DO UPDATE SET last_connected_time = ${at}, last_active_time = ${at}`;
  await stack.fixtureWritten();
}

test("another process's write is in the next answer, and the cursor given before it does not skip it", async () => {
  const other = await stack.createUser();
  const first = await ping(watcher);
  expect(first.status).toBe(200);
  expect(first.body.presences).not.toHaveProperty(String(other.id));

  const at = new Date();
  await writtenElsewhere(other, at);
  const next = await ping(watcher, { last_update_id: first.body.presence_last_update_id });
  expect(next.body.presences[String(other.id)]).toEqual({
    active_timestamp: Math.floor(at.getTime() / 1000),
    idle_timestamp: Math.floor(at.getTime() / 1000),
  });
  expect(next.body.presence_last_update_id).toBe(Math.max(first.body.presence_last_update_id, at.getTime()));
});

test('a write committed after later reads, within PRESENCE_LATE_COMMIT_MS of its time, is in the copy', async () => {
  const late = await stack.createUser();
  await ping(watcher);
  // Reads have started since `at`: the row commits as if its ping had been slow to write.
  const at = new Date(Date.now() - PRESENCE_LATE_COMMIT_MS / 2);
  await ping(watcher);
  await writtenElsewhere(late, at);
  const answer = await ping(watcher);
  expect(answer.body.presences[String(late.id)]).toEqual({
    active_timestamp: Math.floor(at.getTime() / 1000),
    idle_timestamp: Math.floor(at.getTime() / 1000),
  });
});

test('a deactivated user leaves the answers once the realm is read whole again', async () => {
  const leaving = await stack.createUser();
  expect((await ping(leaving)).status).toBe(200);
  expect((await ping(watcher)).body.presences).toHaveProperty(String(leaving.id));

  expect((await admin.client.delete(`/api/v1/users/${leaving.id}`)).status).toBe(200);
  const gone = await until(
    async () => !(String(leaving.id) in (await ping(watcher)).body.presences),
    RELOAD_SECONDS * 1000 + 3_000,
  );
  expect(gone).toBe(true);
  // And it stays out.
  expect((await ping(watcher)).body.presences).not.toHaveProperty(String(leaving.id));
});
