// GET /static/...: Zulip's built files from ZULIP_WEB_DIR/static, typed, cached forever when the
// name is content-hashed and briefly otherwise, nothing outside the folder, Zulip's 404 page.
import fs from 'node:fs';
import path from 'node:path';
import { startStack, type Stack } from '@teamchat/stack';
import { IMMUTABLE_CACHE, SHORT_CACHE } from '../src/views/static';
import { resolveZulipWebDir, WEBPACK_STATS_FILE } from '../src/lib/zulip-web-dir';
import { webRequest } from './helpers';

let stack: Stack;
let webDir: string;
let appScript: string;
let appStylesheet: string;

beforeAll(async () => {
  stack = await startStack({ services: ['web'] });
  webDir = resolveZulipWebDir(process.env.ZULIP_WEB_DIR)!;
  const stats = JSON.parse(fs.readFileSync(path.join(webDir, WEBPACK_STATS_FILE), 'utf8'));
  appScript = stats.chunks.app.find((file: string) => file.startsWith('app.') && file.endsWith('.js'));
  appStylesheet = stats.chunks.app.find((file: string) => file.startsWith('app.') && file.endsWith('.css'));
});

afterAll(async () => {
  await stack?.close();
});

test('a bundle is streamed whole, typed, and cached for a year', async () => {
  const answer = await webRequest(stack, `/static/webpack-bundles/${appScript}`);
  expect(answer.status).toBe(200);
  expect(answer.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(answer.headers['cache-control']).toBe(IMMUTABLE_CACHE);
  expect(answer.body.equals(fs.readFileSync(path.join(webDir, 'static/webpack-bundles', appScript)))).toBe(true);

  const css = await webRequest(stack, `/static/webpack-bundles/${appStylesheet}`, { method: 'HEAD' });
  expect(css.status).toBe(200);
  expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  expect(Number(css.headers['content-length'])).toBe(
    fs.statSync(path.join(webDir, 'static/webpack-bundles', appStylesheet)).size,
  );
  expect(css.body.length).toBe(0);
});

test('the files the app loads by fixed URLs are served, cached briefly', async () => {
  const cases: [string, string][] = [
    ['/static/images/default-avatar.png', 'image/png'],
    ['/static/images/favicon.svg', 'image/svg+xml'],
    ['/static/audio/notification_sounds/zulip.ogg', 'audio/ogg'],
    ['/static/generated/emoji/images-google-64/1f600.png', 'image/png'],
    ['/static/generated/emoji/emoji_codes.json', 'application/json; charset=utf-8'],
  ];
  for (const [url, type] of cases) {
    const answer = await webRequest(stack, url);
    expect([url, answer.status, answer.headers['content-type']]).toEqual([url, 200, type]);
    expect(answer.headers['cache-control']).toBe(SHORT_CACHE);
  }
});

test('nothing outside the folder is reachable', async () => {
  for (const url of [
    '/static/../webpack-stats-production.json',
    '/static/%2e%2e/webpack-stats-production.json',
    '/static/images/%2e%2e/%2e%2e/templates/404.html',
    '/static/images/..%2f..%2fwebpack-stats-production.json',
    '/static/..%5c..%5cwebpack-stats-production.json',
    '/static/images/%00.png',
    '/static/images',
    '/static/',
  ]) {
    const answer = await webRequest(stack, url);
    expect([url, answer.status]).toEqual([url, 404]);
    expect(answer.text).not.toContain('"chunks"');
  }
  // A path that is not percent-encoded UTF-8 is the request's fault.
  expect((await webRequest(stack, '/static/%E0%A4%A')).status).toBe(400);
});

test('a missing file is Zulip’s 404 page', async () => {
  const answer = await webRequest(stack, '/static/images/no-such-image.png');
  expect(answer.status).toBe(404);
  expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(answer.text).toContain('Page not found (404)');
});
