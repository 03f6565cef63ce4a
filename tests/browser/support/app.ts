// Driving Zulip 10.2's web app as a person does: through its markup (web/templates/*.hbs of the
// tag), waiting on what the page shows, never on fixed delays.
import type { Locator, Page } from 'playwright-core';
import type { WebUser } from './stack';

// What the functions run in the page see (this project's TypeScript has no DOM library). They
// are passed as functions, never as strings: the home page's CSP forbids evaluating strings.
declare const document: {
  title: string;
  querySelector(selector: string): { value?: string } | null;
};
declare const window: { location: { hash: string }; teamchatNotReloaded?: boolean };

/** Types the address and password into the login page and submits it; the app then loads. */
export async function logIn(page: Page, user: WebUser): Promise<void> {
  await page.goto('/login/');
  await page.locator('#login_form #id_username').fill(user.deliveryEmail);
  await page.locator('#login_form #id_password').fill(user.password);
  await page.locator('#login_form button[type="submit"]').click();
  await appLoaded(page);
}

/** The loading screen gone and the default view (the inbox) shown. */
export async function appLoaded(page: Page): Promise<void> {
  // The first load parses some 5 MB of scripts: slow on a busy machine.
  await page.locator('#inbox-main').waitFor({ state: 'visible', timeout: 60_000 });
  await page.locator('#app-loading').waitFor({ state: 'hidden' });
}

/** Follows a link of the app (the same as clicking one): a view change, never a reload. */
export async function go(page: Page, hash: string): Promise<void> {
  await page.evaluate((target) => {
    window.location.hash = target;
  }, hash);
}

/** The message list on screen (the app keeps other views' lists in the page, hidden). */
export function messages(page: Page): Locator {
  return page.locator('.message-list:visible .message_row');
}

/** The message on screen whose text contains `text` (the last, if several do). */
export function message(page: Page, text: string): Locator {
  return messages(page)
    .filter({ has: page.locator('.message_content', { hasText: text }) })
    .last();
}

/**
 * Waits until the message is on screen as the server answered it: the app shows a sent message at
 * once ("local echo") and adds its controls (the star) only once the server has it.
 */
export async function messageConfirmed(page: Page, text: string): Promise<Locator> {
  const row = page
    .locator('.message-list:visible .message_row:not(.locally-echoed)')
    .filter({ has: page.locator('.message_content', { hasText: text }) })
    .filter({ has: page.locator('.star') })
    .last();
  await row.waitFor({ state: 'visible' });
  return row;
}

/** In a conversation's view: opens the compose box to reply there, types `content` and sends it. */
export async function reply(page: Page, content: string, shown = content): Promise<Locator> {
  // Opening a direct message conversation from the left sidebar opens the compose box already.
  if (!(await page.locator('#compose-textarea').isVisible()))
    await page.locator('#left_bar_compose_reply_button_big').click();
  return send(page, content, shown);
}

/**
 * Types `content` into the open compose box and sends it; answers the message once the server
 * confirmed it, found by the text it `shown` as (the content, unless markup changes it).
 */
export async function send(page: Page, content: string, shown = content): Promise<Locator> {
  const textarea = page.locator('#compose-textarea');
  await textarea.waitFor({ state: 'visible' });
  await textarea.fill(content);
  await page.locator('#compose-send-button').click();
  // Sending empties the box; the message is then in the view.
  await page.waitForFunction(() => document.querySelector('#compose-textarea')?.value === '');
  const row = await messageConfirmed(page, shown);
  await closeCompose(page);
  return row;
}

export async function closeCompose(page: Page): Promise<void> {
  await page.locator('#compose_close').click();
  await page.locator('#compose-textarea').waitFor({ state: 'hidden' });
}

/** Hovers a message, so its controls (react, edit, star, actions) show. */
export async function hover(row: Locator): Promise<void> {
  await row.locator('.messagebox').hover();
}

/** Marks the page, so a later check can tell it was never reloaded (the mark would be gone). */
export async function markPage(page: Page): Promise<void> {
  await page.evaluate(() => {
    window.teamchatNotReloaded = true;
  });
}

/** Whether the page is still the one markPage marked. */
export function notReloaded(page: Page): Promise<boolean> {
  return page.evaluate(() => window.teamchatNotReloaded === true);
}

/** Waits until the page's text in `selector` (an input's value) passes `test`. */
export async function waitForValue(page: Page, selector: string, pattern: RegExp): Promise<void> {
  await page.waitForFunction(
    ([target, source]) => new RegExp(source).test(document.querySelector(target)?.value ?? ''),
    [selector, pattern.source] as const,
  );
}

/** Waits until the page's title contains `text`. */
export async function waitForTitle(page: Page, text: string): Promise<void> {
  await page.waitForFunction((expected) => document.title.includes(expected), text);
}

/** Opens settings (personal menu → Personal settings) at a section, e.g. "profile", "your-bots". */
export async function openSettings(page: Page, section: string): Promise<void> {
  await page.locator('#personal-menu').click();
  await page.locator("#personal-menu-dropdown a[href^='#settings']").click();
  await page.locator('#settings_overlay_container').waitFor({ state: 'visible' });
  await page.locator(`#settings_page li[data-section="${section}"]`).click();
}

/** Opens organisation settings (gear menu → Organization settings) at a section. */
export async function openOrganizationSettings(page: Page, section: string): Promise<void> {
  await page.locator('#settings-dropdown').click();
  await page.locator('#gear-menu-dropdown a[href="#organization"]').click();
  await page.locator('#settings_overlay_container').waitFor({ state: 'visible' });
  await page.locator(`#settings_page li[data-section="${section}"]`).click();
}

/** Closes the settings overlay (Escape), back to the view under it. */
export async function closeSettings(page: Page): Promise<void> {
  await page.keyboard.press('Escape');
  await page.locator('#settings_overlay_container').waitFor({ state: 'hidden' });
}
