// Render benchmark (issue "Messages rendered as Zulip renders them"): the time to render one
// message's Markdown with renderMessageMarkdown (Zulip's syntax: mentions, channel links,
// emoji, math, highlighted code, Zulip's lists and quotes, link previews) beside plain
// markdown-it with no plugins on the same content, measured in the same run. The messages are a
// mix of the kinds people send (plain text, code, math, emoji-heavy, many links, mentions, lists
// and quotes) and, as a second mix, the inputs of Zulip 10.2's own Markdown test cases.
// Everything it needs is in memory (MarkdownData as loadMarkdownData would give it): the figure
// is rendering alone, without the database. Each round starts with a different side; the table
// reports medians of the per-message CPU time over the rounds.
// BENCH_RENDER_ROUNDS (default 7), BENCH_RENDER_MS (time per side per round, default 300);
// BENCH_RENDER_SOURCE=<dir>[,<dir>...] (directories holding domain's src files) measures other
// versions of the renderer, side by side in the same rounds (bench/README.md: the figure before
// a change).
// Run: npm run bench -- render   (or node --import tsx bench/render/index.ts)

import fs from 'node:fs';
import path from 'node:path';
import MarkdownIt from 'markdown-it';
import { median, report, type Row } from '../lib/report';

const ROUNDS = Number(process.env.BENCH_RENDER_ROUNDS ?? 7);
const MS_PER_SIDE = Number(process.env.BENCH_RENDER_MS ?? 300);
// Comma-separated: several versions of the renderer, measured round by round beside each other.
const SOURCES = (process.env.BENCH_RENDER_SOURCE ?? path.join(__dirname, '../../packages/domain/src'))
  .split(',')
  .map((source) => path.resolve(source));

const MIXES: Record<string, string[]> = {
  plain: [
    'Morning all! I pushed the fix for the login redirect, can someone **review** it before lunch?',
    "Sounds good to me. I'll take a look after the standup, should be quick.",
    'The deploy went fine.\nThe only thing left is the *migration* on the analytics replica, which we do tonight.',
    'Reminder: the office is closed on Friday. ~~Monday too~~ Monday is a normal day.',
  ],
  code: [
    'Here is the handler:\n```python\ndef handle(request, user_id: int) -> dict:\n    """Returns the user\'s settings."""\n    user = User.objects.get(id=user_id)\n    if not user.is_active:\n        raise PermissionDenied("inactive")\n    return {"name": user.full_name, "tz": user.timezone or "UTC", "count": len(user.items) * 2}\n```',
    'Try this:\n```js\nconst res = await fetch(`/api/v1/users/${id}`, { method: "GET" });\nif (!res.ok) throw new Error(res.statusText);\nconst { user } = await res.json();\nconsole.log(user.full_name, [1, 2, 3].map((x) => x * 2));\n```',
    '```bash\nfor f in logs/*.gz; do\n  zcat "$f" | grep -c "ERROR" >> counts.txt\ndone\nexport PATH=$HOME/bin:$PATH\n```\nand then `sort -n counts.txt | tail`.',
    'Use `git rebase -i HEAD~3` and then `git push --force-with-lease`; the `--force` one is dangerous.',
  ],
  math: [
    'The loss is $$L = -\\sum_i y_i \\log \\hat{y}_i$$ averaged over the batch.',
    '```math\n\\int_0^\\infty e^{-x^2} dx = \\frac{\\sqrt{\\pi}}{2}\n```',
    'So $$O(n \\log n)$$ for sorting, $$O(n^2)$$ for the naive version, and $$\\Theta(1)$$ per lookup.',
  ],
  'emoji-heavy': [
    'Congrats!!! :tada: :tada: :confetti: :heart: :+1: :rocket: :star_struck: :clap: :clap: :clap:',
    'haha 😂😂😂 that is so true 🙈 :joy: :rolling_on_the_floor_laughing: 🎉🎉',
    ':thumbs_up: :check: :fire: :eyes: :100: :sparkles: :coffee: :pizza: :beers: :zulip: :octopus:',
  ],
  'many links': [
    'Reading list: https://example.com/a, https://example.com/b?x=1&y=2, https://en.wikipedia.org/wiki/Markdown, www.example.org/c, and [the docs](https://zulip.com/help/format-your-message-using-markdown).',
    'See https://github.com/zulip/zulip/pull/12345 and https://github.com/zulip/zulip/issues/678 (also https://chat.zulip.org/#narrow/channel/9-issues).',
    'Links: [one](https://one.example) [two](https://two.example) [three](https://three.example) https://four.example/path/to/page.html https://five.example',
  ],
  mentions: [
    '@**Alice Smith** @**Bob** can you look at #**engineering>deploy failures**? cc @*backend*',
    '@_**Carol|10** thanks! @**all** the meeting moved to 3pm, see #**general**.',
    '@**Bob** and @**Alice Smith**: @*frontend* is blocked on #**design>new icons**.',
  ],
  'lists and quotes': [
    'Plan:\n1. Fix the bug\n2. Write the test\n  1. unit\n  2. end to end\n3. Ship it\n\n* one\n* two\n  * nested',
    '> Can we ship on Friday?\n\nYes, if the tests pass.\n```quote\nWe never ship on Fridays.\n```',
  ],
};

// Zulip 10.2's Markdown test cases (packages/domain/test/fixtures/zulip-markdown/, Apache-2.0).
const fixtures = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '../../packages/domain/test/fixtures/zulip-markdown/markdown_test_cases.json'),
    'utf8',
  ),
) as { regular_tests: { input: string }[] };
MIXES['Zulip test cases'] = fixtures.regular_tests.map((test) => test.input);

const user = (id: number, full_name: string) => ({ id, full_name, is_bot: false });
const users = [user(8, 'Alice Smith'), user(9, 'Bob'), user(10, 'Carol')];

interface Renderer {
  renderMessageMarkdown: (content: string, data: unknown) => { html: string };
  compileLinkifier: (pattern: string, template: string) => unknown;
}

function markdownData(renderer: Renderer) {
  return {
    usersByName: new Map(users.map((u) => [u.full_name.toLowerCase(), u])),
    usersById: new Map(users.map((u) => [u.id, u])),
    groupsByName: new Map([
      ['backend', { id: 1, name: 'backend' }],
      ['frontend', { id: 2, name: 'frontend' }],
    ]),
    channelsByName: new Map([
      ['engineering', { id: 3, name: 'engineering' }],
      ['general', { id: 4, name: 'general' }],
      ['design', { id: 5, name: 'design' }],
    ]),
    linkifiers: [renderer.compileLinkifier('#(?P<id>[0-9]+)', 'https://github.com/zulip/zulip/issues/{id}')],
    realmEmoji: new Map(),
    translateEmoticons: true,
    realmHost: 'chat.example.com',
  };
}

/**
 * CPU microseconds per message (this process's user + system time, which a loaded machine
 * disturbs less than wall time): renders the mix over and over for about MS_PER_SIDE.
 */
function timePerMessage(render: (content: string) => unknown, messages: string[]): number {
  let rendered = 0;
  const cpu = process.cpuUsage();
  const until = process.hrtime.bigint() + BigInt(MS_PER_SIDE * 1e6);
  while (process.hrtime.bigint() < until) {
    for (const message of messages) render(message);
    rendered += messages.length;
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / rendered;
}

async function main() {
  const plain = new MarkdownIt();
  const sides: Record<string, (content: string) => unknown> = { baseline: (content) => plain.render(content) };
  for (const [index, source] of SOURCES.entries()) {
    const renderer = (await import(path.join(source, 'index.ts'))) as Renderer;
    const data = markdownData(renderer);
    sides[SOURCES.length > 1 ? `teamchat ${index + 1}` : 'teamchat'] = (content) =>
      renderer.renderMessageMarkdown(content, data);
  }
  const names = Object.keys(sides);
  for (const [index, source] of SOURCES.entries()) console.log(`renderer ${index + 1}: ${source}`);
  console.log(`${ROUNDS} rounds of ${MS_PER_SIDE} ms per side per mix; CPU time per message`);
  const rows: Row[] = [];
  const raw: Record<string, Record<string, number[]>> = {};
  for (const [mix, messages] of Object.entries(MIXES)) {
    // Warm up every side (JIT, KaTeX's and the lexers' first load).
    for (const name of names) for (const message of messages) sides[name](message);
    const times: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with a different side.
      const order = names.map((_, index) => names[(index + round) % names.length]);
      for (const name of order) times[name].push(timePerMessage(sides[name], messages));
    }
    raw[mix] = times;
    for (const name of names.filter((name) => name !== 'baseline'))
      rows.push({
        metric: `${mix} (${messages.length} messages)${SOURCES.length > 1 ? `, ${name}` : ''}`,
        value: median(times[name]),
        baseline: median(times.baseline),
        unit: 'µs CPU/message',
        better: 'lower',
      });
  }
  report('render', rows, { sources: SOURCES, rounds: ROUNDS, msPerSide: MS_PER_SIDE, raw });
}

void main();
