// The event declarations (event-schema.ts): what the test kit checks every event against, and
// what the compiler holds producers to.
import { eventProblems, ZULIP_EVENT_TYPES, type ZulipEvent } from '../src';

const snippet: ZulipEvent = {
  type: 'saved_snippets',
  op: 'add',
  saved_snippet: { id: 1, title: 'hi', content: 'hello', date_created: 1_700_000_000 },
};

test('an event as declared has no problems, a polled one with its id neither', () => {
  expect(eventProblems(snippet)).toEqual([]);
  expect(eventProblems({ ...snippet, id: 3 })).toEqual([]);
  expect(eventProblems({ type: 'heartbeat', id: 4 })).toEqual([]);
});

test('a missing, wrong or undeclared field is a problem, nested ones too', () => {
  const { saved_snippet: _missing, ...withoutSnippet } = snippet as Extract<
    ZulipEvent,
    { type: 'saved_snippets'; op: 'add' }
  >;
  expect(eventProblems(withoutSnippet).join('\n')).toContain('saved_snippet');
  expect(eventProblems({ type: 'alert_words', alert_words: [1] }).join('\n')).toContain('alert_words.0');
  expect(eventProblems({ type: 'alert_words', alert_words: [], extra: true }).join('\n')).toContain('extra');
  expect(
    eventProblems({
      type: 'realm_domains',
      op: 'add',
      realm_domain: { domain: 'example.com', allow_subdomains: false, owner: 1 },
    }).join('\n'),
  ).toContain('owner');
});

test('an undeclared type or op is a problem', () => {
  expect(eventProblems({ type: 'no_such_event' })).toEqual(['event type "no_such_event" is not declared']);
  expect(eventProblems({ type: 'drafts', op: 'rename', draft_id: 1 })).not.toEqual([]);
  expect(eventProblems('message')).toEqual(['not an event object']);
});

test('every declared type is listed at run time', () => {
  expect(ZULIP_EVENT_TYPES).toEqual(
    expect.arrayContaining(['message', 'realm_user', 'submessage', 'onboarding_steps']),
  );
});

test('the compiler refuses an event typed { type: string } and a wrong or missing field', () => {
  const loose: { type: string } = { type: 'saved_snippets' };
  // @ts-expect-error: a type only known as string is not an event
  const fromLoose: ZulipEvent = loose;
  // @ts-expect-error: saved_snippet_id is a number
  const wrong: ZulipEvent = { type: 'saved_snippets', op: 'remove', saved_snippet_id: '1' };
  // @ts-expect-error: realm_domain is missing
  const missing: ZulipEvent = { type: 'realm_domains', op: 'add' };
  // @ts-expect-error: no such field
  const extra: ZulipEvent = { type: 'alert_words', alert_words: [], words: [] };
  expect([fromLoose, wrong, missing, extra].map((event) => eventProblems(event).length > 0)).toEqual([
    true,
    true,
    true,
    true,
  ]);
});
