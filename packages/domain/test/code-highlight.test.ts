// Code blocks highlighted as Zulip highlights them, beyond Zulip's fixture cases: Pygments' own
// output for a snippet in each of many languages (fixtures/pygments/, made with Pygments), the
// realm's default language, and what happens to a language we have no lexer for.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { renderMessageMarkdown, type MarkdownData } from '@teamchat/domain';
import { highlightCode } from '../src/code-highlight';

const pygments = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/pygments/highlight-cases.json'), 'utf8')) as {
  cases: { language: string; code: string; html: string }[];
};

describe.each(pygments.cases.map((testCase, index) => ({ ...testCase, index })))(
  'Pygments case $index ($language)',
  ({ language, code, html }) => {
    test('is highlighted as Pygments highlights it', () => expect(highlightCode(code, language)).toBe(html));
  },
);

const data = (defaultCodeBlockLanguage?: string): MarkdownData => ({
  usersByName: new Map(),
  usersById: new Map(),
  groupsByName: new Map(),
  channelsByName: new Map(),
  linkifiers: [],
  defaultCodeBlockLanguage,
});

test("a fence without a language takes the realm's default; one with a language keeps its own", () => {
  const content = '```\nx = 1\n```\n\n```text\nx = 1\n```';
  expect(renderMessageMarkdown(content, data('py')).html).toBe(
    '<div class="codehilite" data-code-language="Python"><pre><span></span><code>' +
      '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>\n</code></pre></div>\n' +
      '<div class="codehilite" data-code-language="Text only"><pre><span></span><code>x = 1\n</code></pre></div>',
  );
  expect(renderMessageMarkdown(content, data()).html).toBe(
    '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>\n' +
      '<div class="codehilite" data-code-language="Text only"><pre><span></span><code>x = 1\n</code></pre></div>',
  );
  // The default can be "quote", as in Zulip, where it picks the fence's handler.
  expect(renderMessageMarkdown('```\nhi\n```', data('quote')).html).toBe('<blockquote>\n<p>hi</p>\n</blockquote>');
});

test('a language without a lexer here is escaped text, named as written (lowercased); leading blank lines go', () => {
  expect(renderMessageMarkdown('```MyLang\n\n\na < "b" & \'c\'\n```', data()).html).toBe(
    '<div class="codehilite" data-code-language="mylang"><pre><span></span><code>' +
      'a &lt; "b" &amp; \'c\'\n</code></pre></div>',
  );
  // Without a language there is no lxml round trip in Zulip: quotes stay escaped.
  expect(renderMessageMarkdown('```\na "b" \'c\'\n```', data()).html).toBe(
    '<div class="codehilite"><pre><span></span><code>a &quot;b&quot; &#39;c&#39;\n</code></pre></div>',
  );
});
