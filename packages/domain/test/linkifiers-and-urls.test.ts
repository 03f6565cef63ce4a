// Linkifiers run on a linear-time engine (re2 semantics, as Zulip),
// with a render budget behind it; every rendered URL goes through one sanitizer with Zulip's
// scheme safe list.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  compileLinkifier,
  LinkifierBudget,
  LINKIFIER_RENDER_BUDGET_MS,
  linkifierMatches,
  re2GroupNames,
  renderMarkdown,
  renderMessageMarkdown,
  sanitizeUrl,
  topicLinks,
  type CompiledLinkifier,
  type MarkdownData,
} from '@teamchat/domain';

const data = (linkifiers: CompiledLinkifier[]): MarkdownData => ({
  usersByName: new Map(),
  usersById: new Map(),
  groupsByName: new Map(),
  channelsByName: new Map(),
  linkifiers,
});
const linkifier = (pattern: string, urlTemplate: string) => compileLinkifier(pattern, urlTemplate)!;
const render = (content: string, linkifiers: CompiledLinkifier[] = []) =>
  renderMessageMarkdown(content, data(linkifiers)).html;
const link = (url: string, text: string) => `<a href="${url}">${text}</a>`;

describe('linkifiers on a linear-time engine', () => {
  // Run in a child process: on a backtracking engine this rendering would take days and block
  // its thread, so only killing the process can end it. The 30 s limit is a hang detector; the
  // rendering itself must take milliseconds (about 25 on a loaded two-core machine), well
  // inside one render budget.
  test('a nested-quantifier pattern renders long near-matches in a message and a topic without stalling', () => {
    const evilWord = `${'a'.repeat(40)}b`;
    const input = {
      pattern: '(?P<id>(a+)+)',
      urlTemplate: 'https://example.com/{id}',
      content: `${Array(5).fill(evilWord).join(' ')} aaa`,
      topic: `${'a'.repeat(59)}b`,
    };
    const script = path.join(__dirname, 'support/render-with-linkifier.ts');
    const child = spawnSync(process.execPath, ['--import', 'tsx', script, JSON.stringify(input)], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    const outcome = { signal: child.signal, status: child.status, stderr: child.stderr };
    expect(outcome).toEqual({ signal: null, status: 0, stderr: '' });
    const result = JSON.parse(child.stdout);
    expect(result.html).toBe(`<p>${Array(5).fill(evilWord).join(' ')} ${link('https://example.com/aaa', 'aaa')}</p>`);
    expect(result.topicLinks).toEqual([]);
    expect(result.milliseconds).toBeLessThan(LINKIFIER_RENDER_BUDGET_MS);
  });

  test('patterns are re2 patterns: inline flags work, look-arounds and back-references do not compile', () => {
    const caseless = linkifier('(?i)zul-(?P<id>\\d+)', 'https://tracker.example/{id}');
    expect(render('ZUL-12 and zul-13', [caseless])).toBe(
      `<p>${link('https://tracker.example/12', 'ZUL-12')} and ${link('https://tracker.example/13', 'zul-13')}</p>`,
    );
    expect(compileLinkifier('(?<=x)(?P<id>\\d+)', 'https://x/{id}')).toBeNull();
    expect(compileLinkifier('(?P<id>\\d+)-\\1', 'https://x/{id}')).toBeNull();
    expect([...re2GroupNames('(?P<org>\\w+)/(?<repo>\\w+)#(?P<id>\\d+)')]).toEqual(['org', 'repo', 'id']);
    expect(() => re2GroupNames('(foo')).toThrow('missing ): (foo');
    expect(() => re2GroupNames('ZUL-(?P<id>\\d????)')).toThrow('bad repetition operator: ????');
    expect(() => re2GroupNames('(?=x)a')).toThrow('invalid perl operator: (?=');
    expect(() => re2GroupNames('(?<!x)a')).toThrow('invalid perl operator: (?<!');
    expect(() => re2GroupNames('(?P<id>\\d+)-\\1')).toThrow('invalid escape sequence: \\1');
    expect(() => re2GroupNames('a{1001}')).toThrow('invalid repetition size: {1001}');
    const alternatives = Array.from({ length: 50 }, (_, n) => `word${n}`).join('|');
    expect(() => re2GroupNames(`(?:${alternatives}){1000}`)).toThrow('pattern too large - compile failed');
    expect(() => re2GroupNames(`(?P<id>(?:${alternatives}){1,100})`)).toThrow('pattern too large - compile failed');
    expect([...re2GroupNames('(?P<id>[0-9]{1,1000})')]).toEqual(['id']);
  });

  test("Zulip's delimiters: after a start, space or opening punctuation, never running into a letter or digit", () => {
    const issues = linkifier('#(?P<id>[0-9]+)', 'https://github.com/zulip/zulip/issues/{id}');
    const url = (id: number) => `https://github.com/zulip/zulip/issues/${id}`;
    expect(render('#1 (#2),#3 x#4 #5x #6.', [issues])).toBe(
      `<p>${link(url(1), '#1')} (${link(url(2), '#2')}),${link(url(3), '#3')} x#4 #5x ${link(url(6), '#6')}.</p>`,
    );
    expect(topicLinks('fix #42, see https://example.com/a.', [issues])).toEqual([
      { text: '#42', url: url(42) },
      { text: 'https://example.com/a', url: 'https://example.com/a' },
    ]);
  });

  test('every match of many linkifiers in a long message is found, earliest first, first linkifier on ties', () => {
    const linkifiers = Array.from({ length: 20 }, (_, n) =>
      linkifier(`L${n}-(?P<id>[0-9]+)`, `https://l${n}.example/{id}`),
    );
    const words = Array.from({ length: 600 }, (_, n) => `L${n % 20}-${n}`);
    // A generous budget: this test is about which matches are found, not about time.
    const matches = linkifierMatches(words.join(' '), linkifiers, new LinkifierBudget(60_000));
    expect(matches.map((match) => match.text)).toEqual(words);
    expect(matches[21].url).toBe('https://l1.example/21');
    const overlapping = [
      linkifier('(?P<id>ab)', 'https://first/{id}'),
      linkifier('(?P<id>abc)', 'https://second/{id}'),
    ];
    const urls = linkifierMatches('abc ab', overlapping).map((match) => match.url);
    expect(urls).toEqual(['https://second/abc', 'https://first/ab']);
  });

  test('a spent render budget leaves the rest of the text without linkifier links, and says so', () => {
    const issues = linkifier('#(?P<id>[0-9]+)', 'https://tracker.example/{id}');
    const spent = renderMessageMarkdown('see #1 and https://example.com', data([issues]), new LinkifierBudget(0));
    expect(spent.html).toBe(`<p>see #1 and ${link('https://example.com', 'https://example.com')}</p>`);
    expect(spent.linkifiersCutShort).toBe(true);
    expect(topicLinks('#1', [issues], new LinkifierBudget(0))).toEqual([]);
    const fresh = renderMessageMarkdown('see #1', data([issues]));
    expect(fresh.html).toBe(`<p>see ${link('https://tracker.example/1', '#1')}</p>`);
    expect(fresh.linkifiersCutShort).toBe(false);
  });
});

describe('one URL sanitizer for every rendered link', () => {
  test("sanitizeUrl keeps Zulip's safe schemes, relative links and fragments, and refuses the rest", () => {
    const cases: [string, string | null][] = [
      ['https://example.com/a?b=c#d', 'https://example.com/a?b=c#d'],
      ['HTTP://Example.com', 'http://Example.com'],
      ['ftp://files.example/x', 'ftp://files.example/x'],
      ['mailto:ada@example.com', 'mailto:ada@example.com'],
      ['ada@example.com', 'mailto:ada@example.com'],
      ['tel:+123', 'tel:+123'],
      ['/user_uploads/1/ab/x.png', '/user_uploads/1/ab/x.png'],
      ['#narrow/channel/1-general', '#narrow/channel/1-general'],
      ['example.com/path', 'http://example.com/path'],
      ['with space', 'http://with%20space'],
      ['javascript:alert(1)', null],
      ['JavaScript:alert(1)', null],
      ['\u0001\u0002javascript:alert(1)', null],
      [' javascript:alert(1)', 'http://%20javascript:alert(1)'],
      ['java\tscr\nipt:alert(1)', null],
      ['vbscript:msgbox(1)', null],
      ['data:text/html,<script>alert(1)</script>', null],
      ['obsidian://open?vault=x', null],
      ['http://[::1/', ''],
    ];
    for (const [url, expected] of cases) expect([url, sanitizeUrl(url)]).toEqual([url, expected]);
  });

  test('a linkifier whose URL comes out unsafe links nothing; safe ones still link', () => {
    const anyUrl = linkifier('!(?P<url>\\S+)', '{+url}');
    const ok = 'https://ok.example/a';
    expect(render('!javascript:alert(document.cookie) !data:text/html,x !https://ok.example/a', [anyUrl])).toBe(
      // The linkifier's match, as in Zulip (a bare link needs whitespace or ' " ( , : < before it).
      `<p>!javascript:alert(document.cookie) !data:text/html,x ${link(ok, `!${ok}`)}</p>`,
    );
    const scripted = linkifier('#(?P<id>[0-9]+)', 'javascript:alert({id})');
    expect(render('bug #12', [scripted])).toBe('<p>bug #12</p>');
    expect(topicLinks('bug #12 !javascript:alert(1) !https://ok.example', [scripted, anyUrl])).toEqual([
      { text: '!https://ok.example', url: 'https://ok.example' },
    ]);
  });

  test('Markdown links, autolinks and bare links with unsafe schemes stay text, in messages and descriptions', () => {
    const markdownLinks = '[a](javascript:alert(1)) [b](JAVASCRIPT:alert(1)) [c](data:text/html,x)';
    const unsafe = `${markdownLinks} <javascript:alert(1)> ![i](vbscript:x)`;
    const expected = `<p>${markdownLinks} &lt;javascript:alert(1)&gt; ![i](vbscript:x)</p>`;
    expect(render(unsafe)).toBe(expected);
    expect(renderMarkdown(unsafe)).toBe(expected);
    const upload = '/user_uploads/1/ab/x.pdf';
    const mail = 'mailto:ada@example.com';
    expect(render(`[docs](example.com/docs) [up](${upload}) [me](${mail}) www.example.org`)).toBe(
      `<p>${link('http://example.com/docs', 'docs')} <a href="${upload}">up</a>` +
        ` <a href="${mail}">me</a> ${link('http://www.example.org', 'www.example.org')}</p>`,
    );
  });
});
