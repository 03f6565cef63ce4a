// Every event a test sees is checked against the declarations of packages/bus (event-schema.ts),
// as the API client checks every answer against zulip.yaml: captured events as producers wrote
// them, polled events as a queue gave them. An event not as declared fails the test that saw it.

import { eventProblems } from '@teamchat/bus';

/** Throws, naming the event and each problem, unless `event` is as declared. */
export function checkDeclaredEvent(event: unknown, seen: 'committed' | 'polled'): void {
  const problems = eventProblems(event);
  if (problems.length === 0) return;
  throw new Error(
    `a ${seen} event is not as packages/bus/src/event-schema.ts declares it:\n  ${problems.join('\n  ')}\n` +
      `event: ${JSON.stringify(event)}`,
  );
}
