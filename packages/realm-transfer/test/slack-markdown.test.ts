// Every case of Zulip 10.2's slack_message_conversion.json (copied into fixtures/slack/) must
// convert to Zulip's expected Markdown.
import fs from 'node:fs';
import path from 'node:path';
import { convertToZulipMarkdown, type MarkdownContext } from '../src/slack/markdown';

interface ConversionCase {
  name: string;
  input: string;
  conversion_output: string;
}

const fixture = JSON.parse(
  fs.readFileSync(path.join(__dirname, 'fixtures/slack/slack_message_conversion.json'), 'utf8'),
) as { regular_tests: ConversionCase[] };

const context: MarkdownContext = { users: [], channelIds: new Map(), userIds: new Map() };

describe('Slack text to Zulip Markdown (Zulip 10.2 slack_message_conversion.json)', () => {
  it('has the 17 cases of Zulip 10.2', () => {
    expect(fixture.regular_tests).toHaveLength(17);
  });

  it.each(fixture.regular_tests.map((test) => [test.name, test] as const))('%s', (_name, test) => {
    expect(convertToZulipMarkdown(test.input, context).content).toBe(test.conversion_output);
  });

  const users = [
    { id: 'U061A1R2R', name: 'tim', deleted: false, real_name: 'Tim Abbott', is_mirror_dummy: false },
    { id: 'U061A5N1G', name: 'jane', deleted: true, real_name: 'Jane Doe', is_mirror_dummy: false },
  ];
  const mentionContext: MarkdownContext = {
    users,
    channelIds: new Map([['general', 'C5Z73A7RA']]),
    userIds: new Map([
      ['U061A1R2R', 7],
      ['U061A5N1G', 8],
    ]),
  };

  it('rewrites user mentions, channel links and workspace mentions as Zulip does', () => {
    expect(
      convertToZulipMarkdown('Hi <@U061A1R2R|tim> and <@U061A5N1G>, see <#C5Z73A7RA|general> <!here>', mentionContext),
    ).toEqual({
      content: 'Hi @**Tim Abbott** and @**jane**, see #**general** @**all**',
      mentionedUserIds: [7, 8],
      hasLink: false,
    });
    // A short name that is not the user's leaves the mention as it is (get_user_mentions).
    expect(convertToZulipMarkdown('<@U061A1R2R|bob>', mentionContext)).toEqual({
      content: '<@U061A1R2R|bob>',
      mentionedUserIds: [],
      hasLink: false,
    });
    expect(convertToZulipMarkdown('<https://foo.com|foo>', mentionContext).hasLink).toBe(true);
  });
});
