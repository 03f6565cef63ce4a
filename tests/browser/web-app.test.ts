// Zulip 10.2's web app, unmodified, against Teamchat in a real browser (headless Chromium): two
// people, each in their own browser context, log in through the login page and use the app as a
// person does (tests/README.md lists the steps). Each step fails on what it cannot do, and also on
// any uncaught page error, console error or request answered with an unexpected 4xx/5xx in either
// browser, listed in full. Screenshots of each step: var/browser/web-app/NN-<step>.png.
import type { Locator, Page } from 'playwright-core';
import {
  closeCompose,
  closeSettings,
  go,
  hover,
  logIn,
  markPage,
  message,
  messageConfirmed,
  notReloaded,
  openOrganizationSettings,
  openSettings,
  reply,
  send,
  waitForTitle,
  waitForValue,
} from './support/app';
import { BrowserSession, type Person } from './support/browser';
import { startWebStack, type WebStack } from './support/stack';

jest.setTimeout(150_000);

let web: WebStack;
let session: BrowserSession;
/** Ada administers the organisation; Max is a member. */
let ada: Person;
let max: Person;

beforeAll(async () => {
  web = await startWebStack();
  session = await BrowserSession.start('web-app', web.stack.gatewayUrl);
  ada = await session.person('ada');
  max = await session.person('max');
}, 120_000);

afterAll(async () => {
  await session?.close();
  await web?.stack.close();
});

const step = (name: string, run: () => Promise<void>) => session.step(name, run);

async function expectNotReloaded(page: Page): Promise<void> {
  expect(await notReloaded(page)).toBe(true);
}

function topicHash(channel: 'general' | 'design', topic: string): string {
  return `#narrow/channel/${web.channels[channel]}-${channel}/topic/${topic}`;
}

async function text(locator: Locator): Promise<string> {
  return (await locator.innerText()).trim();
}

describe('logging in and the home view', () => {
  test('each person logs in through the login page', async () => {
    await step('login', async () => {
      await logIn(ada.page, web.admin);
      await logIn(max.page, web.member);
      await markPage(ada.page);
      await markPage(max.page);
    });
    await session.screenshot(ada, 'ada-logged-in');
  });

  test('the inbox shows the channels, their topics and the unread counts', async () => {
    await step('home view', async () => {
      const inbox = max.page.locator('#inbox-main');
      const channelRow = (name: string) => inbox.locator('.inbox-header', { hasText: name });
      await channelRow('general').waitFor();
      expect(await text(channelRow('general').locator('.unread_count'))).toBe('2');
      expect(await text(channelRow('design').locator('.unread_count'))).toBe('1');
      for (const topic of ['greetings', 'plans', 'logo'])
        await inbox.locator('.inbox-topic-name', { hasText: topic }).waitFor();
      const sidebarCount = (id: number) => max.page.locator(`#stream_filters li[data-stream-id="${id}"] .unread_count`);
      expect(await text(sidebarCount(web.channels.general))).toBe('2');
      expect(await text(sidebarCount(web.channels.design))).toBe('1');
    });
    await session.screenshot(max, 'max-home-view');
  });
});

describe('messages, live in the other browser', () => {
  test('a channel message appears in the other browser without a reload', async () => {
    await step('channel message', async () => {
      // Max opens the topic from his inbox; Ada goes there too.
      await max.page.locator('#inbox-main .inbox-topic-name a', { hasText: 'greetings' }).click();
      await message(max.page, 'Welcome to the team!').waitFor();
      await go(ada.page, topicHash('general', 'greetings'));
      await message(ada.page, 'Welcome to the team!').waitFor();
      // The user list shows Max under "This channel": the channel's subscribers, from the state.
      await ada.page.locator(`#buddy-list-users-matching-view [data-user-id="${web.member.id}"]`).waitFor();
      await reply(ada.page, 'Lunch at noon, anyone?');
      await messageConfirmed(max.page, 'Lunch at noon, anyone?');
      await expectNotReloaded(max.page);
    });
    await session.screenshot(max, 'max-sees-channel-message');
  });

  test('a direct message appears in the other browser without a reload', async () => {
    await step('direct message', async () => {
      // Ada opens her conversation with Max (the link his name in the user list points to).
      // The conversation is empty, so the app opens the compose box to Max at once.
      await go(ada.page, `#narrow/dm/${web.member.id}-Max-Member`);
      await ada.page.locator('#compose-direct-recipient .pill', { hasText: 'Max Member' }).waitFor();
      await send(ada.page, 'Hi Max, a private word.');
      // Max's left sidebar lists the new conversation with its unread count, live.
      const conversation = max.page.locator(`#direct-messages-list [data-user-ids-string="${web.admin.id}"]`).first();
      await conversation.waitFor();
      await conversation.click();
      await messageConfirmed(max.page, 'Hi Max, a private word.');
      await expectNotReloaded(max.page);
    });
    await session.screenshot(max, 'max-sees-direct-message');
  });

  test('a reply comes back live', async () => {
    await step('reply', async () => {
      await reply(max.page, 'Sure, what is it?');
      await messageConfirmed(ada.page, 'Sure, what is it?');
    });
  });

  test('an emoji reaction shows in the other browser', async () => {
    await step('reaction', async () => {
      const row = message(ada.page, 'Sure, what is it?');
      await hover(row);
      await row.locator('.message_controls .reaction_button').click();
      await ada.page.locator('#emoji-popover-filter').fill('tada');
      await ada.page.locator('.emoji-popover-emoji[data-emoji-name="tada"]:visible').click();
      await row.locator('.message_reaction.reacted').waitFor();
      const seen = message(max.page, 'Sure, what is it?').locator('.message_reaction');
      await seen.waitFor();
      // With few reactions, the app names who reacted in place of a count.
      expect(await text(seen.locator('.message_reaction_count'))).toBe('Ada Admin');
    });
    await session.screenshot(max, 'max-sees-reaction');
  });

  test('an edited message changes in the other browser', async () => {
    await step('edit', async () => {
      const row = message(ada.page, 'Hi Max, a private word.');
      await hover(row);
      await row.locator('.edit_content_button').click();
      const editor = row.locator('.message_edit_content');
      await editor.fill('Hi Max, a private word (edited).');
      await row.locator('.message_edit_save').click();
      await messageConfirmed(ada.page, 'a private word (edited)');
      const seen = message(max.page, 'a private word (edited)');
      await seen.waitFor();
      await seen.locator('.message_edit_notice').waitFor();
    });
    await session.screenshot(max, 'max-sees-edit');
  });

  test('a starred message is in the starred view', async () => {
    await step('star', async () => {
      const row = message(max.page, 'a private word (edited)');
      await hover(row);
      await row.locator('.star').click();
      await row.locator('.star.zulip-icon-star-filled').waitFor();
      await max.page.locator('#left-sidebar-navigation-list .top_left_starred_messages').click();
      await messageConfirmed(max.page, 'a private word (edited)');
    });
    await session.screenshot(max, 'max-starred-view');
  });

  test('marking a topic as read clears its unread count', async () => {
    await step('mark as read', async () => {
      await max.page.locator('#left-sidebar-navigation-list .top_left_inbox').click();
      // The first visit to the inbox explains it, once (an onboarding step the server records).
      const intro = max.page.locator('.micromodal', { hasText: 'Welcome to your inbox' });
      await intro.locator('.dialog_submit_button').click();
      await intro.waitFor({ state: 'detached' });
      const logo = max.page.locator('#inbox-main .inbox-row', { hasText: 'logo' });
      await logo.waitFor();
      await logo.locator('.unread_count').click();
      await logo.waitFor({ state: 'detached' });
      await max.page
        .locator(`#stream_filters li[data-stream-id="${web.channels.design}"] .unread_count:empty`)
        .waitFor({ state: 'attached' });
      // The server has it too: no unread message left in #design for Max.
      const unread = await web.member.client.get('/api/v1/messages', {
        anchor: 'newest',
        num_before: 10,
        num_after: 0,
        narrow: [
          { operator: 'channel', operand: web.channels.design },
          { operator: 'is', operand: 'unread' },
        ],
      });
      expect(unread.body.messages).toEqual([]);
    });
    await session.screenshot(max, 'max-marked-read');
  });
});

describe('uploads and polls', () => {
  test('a file uploaded in the compose box can be opened from the message', async () => {
    await step('upload', async () => {
      await go(ada.page, topicHash('general', 'greetings'));
      await go(max.page, topicHash('general', 'greetings'));
      await message(ada.page, 'Lunch at noon, anyone?').waitFor();
      await ada.page.locator('#left_bar_compose_reply_button_big').click();
      await ada.page.locator('#compose .file_input').setInputFiles({
        name: 'agenda.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('1. lunch\n2. the logo\n'),
      });
      // The upload's link replaces its placeholder in the text.
      await waitForValue(ada.page, '#compose-textarea', /\[agenda\.txt\]\(\/user_uploads\/[^)]+\)/);
      await ada.page.locator('#compose-send-button').click();
      await messageConfirmed(ada.page, 'agenda.txt');
      await closeCompose(ada.page);
      // Max opens the link: a new tab with the file. The file is served with Zulip's own CSP for
      // uploads (nginx uploads-internal.conf), whose plugin-types Chromium remarks on as removed.
      max.expectedConsole = [/directive 'plugin-types' has been removed/];
      const link = message(max.page, 'agenda.txt').locator('.message_content a', { hasText: 'agenda.txt' });
      const [tab] = await Promise.all([max.context.waitForEvent('page'), link.click()]);
      await tab.waitForLoadState();
      expect(await tab.locator('body').innerText()).toContain('2. the logo');
      await tab.close();
      max.expectedConsole = [];
    });
    await session.screenshot(max, 'max-sees-upload');
  });

  test('a poll made in one browser is voted on in the other', async () => {
    await step('poll', async () => {
      await reply(ada.page, '/poll Where shall we eat?\nPizza place\nSushi bar', 'Where shall we eat?');
      const poll = message(max.page, 'Where shall we eat?').locator('.poll-widget');
      await poll.locator('.poll-question-header', { hasText: 'Where shall we eat?' }).waitFor();
      const sushi = poll.locator('li', { hasText: 'Sushi bar' });
      await sushi.locator('.poll-vote').click();
      await sushi.locator('.poll-vote.current-user-vote').waitFor();
      // Ada's poll counts Max's vote, live.
      const adaSushi = message(ada.page, 'Where shall we eat?').locator('.poll-widget li', { hasText: 'Sushi bar' });
      await adaSushi.locator('.poll-vote', { hasText: '1' }).waitFor();
      await adaSushi.locator('.poll-names', { hasText: web.member.fullName }).waitFor();
    });
    await session.screenshot(ada, 'ada-sees-vote');
  });
});

describe('settings', () => {
  test("a person's new name shows in the other browser", async () => {
    await step('personal setting', async () => {
      await openSettings(max.page, 'profile');
      const name = max.page.locator('#full_name');
      await name.fill('Max Power');
      await name.press('Tab');
      await max.page.locator('.full-name-change-container .alert-success').waitFor();
      // Ada's list of direct message conversations names him anew.
      await ada.page.locator('#direct-messages-list', { hasText: 'Max Power' }).waitFor();
      await closeSettings(max.page);
      await expectNotReloaded(ada.page);
    });
    await session.screenshot(ada, 'ada-sees-new-name');
  });

  test("the organisation's new name shows in the other browser", async () => {
    await step('organisation setting', async () => {
      await openOrganizationSettings(ada.page, 'organization-profile');
      await ada.page.locator('#id_realm_name').fill('Teamchat Friends');
      await ada.page.locator('#org-org-profile .save-button').click();
      // The app titles its page with the organisation's name: both browsers follow the change.
      await waitForTitle(ada.page, 'Teamchat Friends');
      await waitForTitle(max.page, 'Teamchat Friends');
      await closeSettings(ada.page);
      await expectNotReloaded(max.page);
    });
    await session.screenshot(ada, 'ada-organization-renamed');
  });

  test('a bot is created in the settings', async () => {
    await step('bot', async () => {
      await openSettings(ada.page, 'your-bots');
      await ada.page.locator('#bot-settings .add-a-new-bot').click();
      await ada.page.locator('#create_bot_form #create_bot_name').fill('Helper Bot');
      await ada.page.locator('#create_bot_form #create_bot_short_name').fill('helper');
      await ada.page.locator('.micromodal .dialog_submit_button').click();
      await ada.page.locator('#active_bots_list .bot-information-box', { hasText: 'Helper Bot' }).waitFor();
      const bots = await web.admin.client.get('/api/v1/bots');
      expect(bots.body.bots.map((bot: { full_name: string }) => bot.full_name)).toEqual(['Helper Bot']);
    });
    await session.screenshot(ada, 'ada-created-bot');
    await step('close settings', () => closeSettings(ada.page));
  });
});

describe('logging out', () => {
  test('after logging out, the session no longer works', async () => {
    await step('logout', async () => {
      // Max's session cookie, as the browser sends it: it works before logging out (a GET needs no CSRF token).
      const cookie = (await max.context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const me = () => fetch(new URL('/json/users/me', web.stack.gatewayUrl), { headers: { cookie } });
      expect((await me()).status).toBe(200);
      // As the page unloads, the app deletes its event queue (DELETE /json/events); the poll parked
      // on it is answered with no events, as Zulip's Tornado answers it: no error is expected.
      await max.page.locator('#personal-menu').click();
      await max.page.locator('#personal-menu-dropdown .logout_button').click();
      await max.page.locator('#login_form #id_username').waitFor();
      // The old session cookie, sent again, is refused.
      expect((await me()).status).toBe(401);
      // And the home page sends the browser to the login page.
      await max.page.goto('/');
      await max.page.locator('#login_form #id_username').waitFor();
      await appLoadedNot(max.page);
    });
    await session.screenshot(max, 'max-logged-out');
  });
});

/** The login page, not the app. */
async function appLoadedNot(page: Page): Promise<void> {
  expect(await page.locator('#inbox-main').count()).toBe(0);
}
