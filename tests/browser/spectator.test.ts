// A logged-out visitor ("spectator") in Zulip 10.2's web app, unmodified, in headless Chromium:
// the organisation admits spectators and has a web-public channel, so its home page is the app
// without a session (docs/web-app.md, "Spectators"). The visitor opens the channel's narrow and
// reads its messages; the app never opens an event queue. Any page error, console error or
// refused request fails the step. Screenshots: var/browser/spectator/NN-<step>.png.
import type { Stream } from '@teamchat/db';
import { appLoaded, message } from './support/app';
import { BrowserSession, type Person } from './support/browser';
import { startWebStack, type WebStack } from './support/stack';

jest.setTimeout(150_000);

let web: WebStack;
let session: BrowserSession;
let visitor: Person;
let channel: Stream;
/** Every request to the event queue endpoints the visitor's page made. */
const eventRequests: string[] = [];

beforeAll(async () => {
  web = await startWebStack();
  const { stack, admin } = web;
  await stack.db.realm.update({ where: { id: stack.realm.id }, data: { enable_spectator_access: true } });
  await stack.fixtureWritten();
  channel = await stack.createStream({ name: 'announcements', isWebPublic: true, subscribers: [admin.id] });
  for (const content of ['Release 2.0 is out.', 'Office closed on Friday.']) {
    const sent = await admin.client.post('/api/v1/messages', {
      type: 'stream',
      to: channel.id,
      topic: 'news',
      content,
    });
    if (sent.status !== 200) throw new Error(`sending: ${JSON.stringify(sent.body)}`);
  }
  session = await BrowserSession.start('spectator', stack.gatewayUrl);
  visitor = await session.person('visitor');
  visitor.page.on('request', (request) => {
    if (new URL(request.url()).pathname.endsWith('/events')) eventRequests.push(`${request.method()} ${request.url()}`);
  });
}, 120_000);

afterAll(async () => {
  await session?.close();
  await web?.stack.close();
});

test('a logged-out visitor opens a web-public channel and reads its messages', async () => {
  await session.step('spectator reads a web-public channel', async () => {
    await visitor.page.goto(`/#narrow/channel/${channel.id}-${channel.name}`);
    await visitor.page.locator('#app-loading').waitFor({ state: 'hidden', timeout: 60_000 });
    await message(visitor.page, 'Release 2.0 is out.').waitFor();
    await message(visitor.page, 'Office closed on Friday.').waitFor();
    // The spectator's own chrome: a log-in button instead of a compose box, the channel listed.
    await visitor.page.locator('.spectator_login_buttons, .login_button').first().waitFor();
    await visitor.page.locator(`#stream_filters li[data-stream-id="${channel.id}"]`).waitFor();
  });
  await session.screenshot(visitor, 'spectator-channel');
  // Spectators get no event queue (register answered queue_id null): the app never polls.
  expect(eventRequests).toEqual([]);
});

test('a channel they may not read stays out of their list', async () => {
  await session.step('other channels hidden', async () => {
    const listed = await visitor.page
      .locator('#stream_filters li[data-stream-id]')
      .evaluateAll((rows) =>
        rows.map((row) => Number((row as unknown as { dataset: { streamId: string } }).dataset.streamId)),
      );
    expect(listed).toEqual([channel.id]);
    expect(listed).not.toContain(web.channels.general);
  });
});

// The app is still the logged-in person's after a spectator visit: nothing of the visit leaks.
test('logging in from the spectator page shows the person their app', async () => {
  await session.step('spectator logs in', async () => {
    await visitor.page.goto('/login/');
    await visitor.page.locator('#login_form #id_username').fill(web.member.deliveryEmail);
    await visitor.page.locator('#login_form #id_password').fill(web.member.password);
    await visitor.page.locator('#login_form button[type="submit"]').click();
    await appLoaded(visitor.page);
  });
});
