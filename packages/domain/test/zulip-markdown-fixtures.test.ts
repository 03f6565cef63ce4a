// Messages render as Zulip renders them: Zulip 10.2's own Markdown test cases
// (fixtures/zulip-markdown/, the file Zulip's test_markdown.py runs) through the code path
// messages take (renderMessageMarkdown), compared with Zulip's expected_output as
// test_markdown_fixtures compares them. NOT_MET lists the cases not met yet with the reason; a
// listed case that starts passing fails too, so the list stays true.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { renderMessageMarkdown, type MarkdownData } from '@teamchat/domain';

interface RegularCase {
  name: string;
  input: string;
  expected_output: string;
  translate_emoticons?: boolean;
}

const fixtures = JSON.parse(
  readFileSync(path.join(__dirname, 'fixtures/zulip-markdown/markdown_test_cases.json'), 'utf8'),
) as { regular_tests: RegularCase[]; linkify_tests: [string, string, string][] };

/** Reason → cases. Linkify cases are named "linkify: " and their input's first 60 characters. */
const NOT_MET: Record<string, string[]> = {};

const reasonByCase = new Map<string, string>();
for (const [reason, names] of Object.entries(NOT_MET)) for (const name of names) reasonByCase.set(name, reason);

// Zulip's test realm as far as the cases reach: its URL is http://zulip.testserver, Zoe (user 7)
// is mentioned; no case names a
// channel, group, custom emoji or linkifier outside code.
const zoe = { id: 7, full_name: 'Zoe', is_bot: false };
const realmData = (translateEmoticons: boolean): MarkdownData => ({
  usersByName: new Map([['zoe', zoe]]),
  usersById: new Map([[7, zoe]]),
  groupsByName: new Map(),
  channelsByName: new Map(),
  linkifiers: [],
  realmEmoji: new Map(),
  translateEmoticons,
  realmHost: 'zulip.testserver',
  // Zulip's test settings: external images and videos load through this Camo.
  camo: { uri: 'https://external-content.zulipcdn.net/external_content/', key: 'dummy' },
});

interface Case {
  name: string;
  input: string;
  expected: string;
  translateEmoticons: boolean;
}

const regularCases: Case[] = fixtures.regular_tests.map((test) => ({
  name: test.name,
  input: test.input,
  expected: test.expected_output,
  // Zulip renders these as a message from a user with translate_emoticons on.
  translateEmoticons: test.translate_emoticons === true,
}));

// As test_markdown_fixtures: the reference's %s is the link to `url` (mailto: for an address,
// http:// when no scheme); a reference without %s is the whole expected output.
const linkifyCases: Case[] = fixtures.linkify_tests.map(([input, reference, url]) => {
  const href = url.startsWith('http') ? url : url.includes('@') ? `mailto:${url}` : `http://${url}`;
  const expected = reference.includes('%s') ? reference.replace('%s', `<a href="${href}">${url}</a>`) : reference;
  return { name: `linkify: ${input.slice(0, 60)}`, input, expected, translateEmoticons: false };
});

const allCases = [...regularCases, ...linkifyCases];

test('case names are unique and every listed case exists', () => {
  const names = allCases.map((testCase) => testCase.name);
  expect(new Set(names).size).toBe(names.length);
  expect([...reasonByCase.keys()].filter((name) => !names.includes(name))).toEqual([]);
});

describe.each(allCases)('$name', ({ name, input, expected, translateEmoticons }) => {
  const reason = reasonByCase.get(name);
  const render = () => renderMessageMarkdown(input, realmData(translateEmoticons)).html;
  if (reason === undefined) {
    test('renders as Zulip', () => expect(render()).toBe(expected));
  } else {
    test(`is listed as not met (${reason}), and still differs`, () => expect(render()).not.toBe(expected));
  }
});
