// Math in messages, beyond Zulip's fixture cases (zulip-markdown-fixtures.test.ts, which
// compares KaTeX's exact output): how a ```math block ends and splits, that nothing else renders
// inside TeX, and that KaTeX's console output stays out of the service's log.
import { compileLinkifier, renderMessageMarkdown, type MarkdownData } from '@teamchat/domain';

const data: MarkdownData = {
  usersByName: new Map(),
  usersById: new Map(),
  groupsByName: new Map(),
  channelsByName: new Map(),
  linkifiers: [compileLinkifier('#(?P<id>[0-9]+)', 'https://github.com/zulip/zulip/issues/{id}')!],
  translateEmoticons: true,
};
const render = (content: string) => renderMessageMarkdown(content, data);
/** The TeX of each KaTeX rendering, as KaTeX records it (escaped for HTML). */
const texSources = (html: string) =>
  [...html.matchAll(/<annotation encoding="application\/x-tex">([^<]*)<\/annotation>/g)].map((match) => match[1]);

test('a math block ends only at a line that is its opening fence; a longer fence inside is TeX', () => {
  const html = render('```math\na\n````\nb\n```\nafter').html;
  expect(texSources(html)).toEqual(['a\n````\nb']);
  expect(html).toMatch(/^<p><span class="katex-display"><span class="katex">/);
  expect(html).toMatch(/<\/span><\/p>\n<p>after<\/p>$/);
  // Unclosed, it runs to the end of the message; ~~~ and any case of "math" open one too.
  expect(texSources(render('~~~MATH\nx^2').html)).toEqual(['x^2']);
  // Without lines it is nothing.
  expect(render('```math\n```').html).toBe('');
});

test("a math block's paragraphs render one by one, a refused one as Zulip's tex-error, in one paragraph", () => {
  const html = render("```math\nx \n\n\\error{'a'}\n\ny\n```").html;
  expect(texSources(html)).toEqual(['x', 'y']);
  const parts = html.split('\n\n');
  expect(parts).toHaveLength(3);
  expect(parts[0]).toMatch(/^<p><span class="katex-display">/);
  expect(parts[1]).toBe('<span class="tex-error">\\error{&#x27;a&#x27;}</span>');
  expect(parts[2]).toMatch(/^<span class="katex-display">.*<\/span><\/p>$/s);
});

test('inside $$…$$ nothing else renders: no link, linkifier, emoji or emoticon', () => {
  const tex = 'https://example.org \\#42 :smile: :) 😀';
  const result = render(`$$${tex}$$ #42 :)`);
  expect(texSources(result.html)).toEqual([tex]);
  const [math, rest] = result.html.split('</annotation>');
  expect(math).not.toMatch(/<a |class="emoji/);
  // After the math, the text renders as usual.
  expect(rest).toContain('<a href="https://github.com/zulip/zulip/issues/42">#42</a>');
  expect(rest).toContain('class="emoji emoji-1f642"');
  expect(result.hasLink).toBe(true);
  expect(render('$$https://example.org$$').hasLink).toBe(false);
});

test("$$ opens and closes math only where Zulip's TEX_RE lets it (not beside a word or another $)", () => {
  for (const content of ['a$$x$$', '$$x$$b', '$$$x$$', '$$x$$$', '$$_x$$', '$$x\ny$$']) {
    expect(texSources(render(content).html)).toEqual([]);
  }
  expect(texSources(render('($$x$$), $$y$$.').html)).toEqual(['x', 'y']);
});

test('what KaTeX prints (\\message, characters without metrics) stays out of the console', () => {
  const spies = (['log', 'warn', 'error'] as const).map((method) => jest.spyOn(console, method));
  try {
    const html = render('$$\\message{hello} \\errmessage{there} 😀$$').html;
    expect(html).toContain('class="katex"');
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
});
