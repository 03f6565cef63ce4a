// Renders one message and one topic with one linkifier and prints the result as JSON, in a
// process of its own: a test can then stop a rendering that never ends (a backtracking engine on
// an evil pattern blocks its thread, so no in-process timer could fire).
// Usage: node --import tsx render-with-linkifier.ts '<{"pattern","urlTemplate","content","topic"}>'
import { compileLinkifier, renderMessageMarkdown, topicLinks } from '@teamchat/domain';

const { pattern, urlTemplate, content, topic } = JSON.parse(process.argv[2]) as Record<string, string>;
const linkifier = compileLinkifier(pattern, urlTemplate);
const linkifiers = linkifier ? [linkifier] : [];
const data = {
  usersByName: new Map(),
  usersById: new Map(),
  groupsByName: new Map(),
  channelsByName: new Map(),
  linkifiers,
};
const started = performance.now();
const html = renderMessageMarkdown(content, data).html;
const links = topicLinks(topic, linkifiers);
process.stdout.write(JSON.stringify({ html, topicLinks: links, milliseconds: performance.now() - started }));
