// Alert words (the users service keeps them in alert_word): a message whose text contains one
// of a recipient's words, as a whole word and in any case, gets that recipient's
// has_alert_word flag — on sending, and again when its content is edited.

import type { TxClient } from '@teamchat/db';

/** What may stand right before and right after an alert word (besides the start or end of the text). */
const BEFORE = /[\s'"(,:<]/;
const AFTER = /[\s'"),.:;?!>]/;

/** Code is not prose: fenced blocks and inline code spans are not searched. */
function searchableText(content: string): string {
  return content
    .replace(/(```|~~~)[\s\S]*?(?:\1|$)/g, ' ')
    .replace(/`[^`\n]*`/g, ' ')
    .toLowerCase();
}

function containsWord(text: string, word: string): boolean {
  for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
    const before = at === 0 ? '' : text[at - 1];
    const after = at + word.length >= text.length ? '' : text[at + word.length];
    if ((before === '' || BEFORE.test(before)) && (after === '' || AFTER.test(after))) return true;
  }
  return false;
}

/** Which of `userIds` have an alert word in `content`. */
export async function usersAlertedBy(
  db: Pick<TxClient, '$queryRaw'>,
  realmId: number,
  userIds: number[],
  content: string,
): Promise<Set<number>> {
  const rows = await db.$queryRaw<{ user_profile_id: number; word: string }[]>`
    SELECT user_profile_id, word FROM alert_word WHERE realm_id = ${realmId} AND user_profile_id = ANY(${userIds}::int[])`;
  return usersAlertedByWords(rows, content);
}

/** usersAlertedBy on alert words already read (a send reads them with its context). */
export function usersAlertedByWords(rows: { user_profile_id: number; word: string }[], content: string): Set<number> {
  const alerted = new Set<number>();
  if (rows.length === 0) return alerted;
  const text = searchableText(content);
  for (const { user_profile_id: userId, word } of rows) {
    if (!alerted.has(userId) && containsWord(text, word.toLowerCase())) alerted.add(userId);
  }
  return alerted;
}
