// Alert words (Zulip's do_add_alert_words / do_remove_alert_words): kept per user,
// case-insensitively distinct, with the case first given; every change sends the whole
// list to the user's clients as an alert_words event.

import { transaction, type Tx, type UserProfile } from '@teamchat/db';
import { userAlertWords } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { lockUser } from '../lib/locks';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

/** Adds the words the user does not have yet (ignoring case); returns the new list. */
export async function doAddAlertWords(
  deps: Deps,
  user: Pick<UserProfile, 'id' | 'realm_id'>,
  words: string[],
): Promise<string[]> {
  return transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    // Among new spellings of one word the last given wins, as in Zulip; a word the user
    // already has (in any case, as PostgreSQL lowers it) is skipped by the unique index.
    const added = new Map<string, string>();
    for (const word of words) added.set(word.toLowerCase(), word);
    if (added.size) {
      await tx.db.$executeRaw`
        INSERT INTO alert_word (realm_id, user_profile_id, word)
        SELECT ${user.realm_id}, ${user.id}, word FROM unnest(${[...added.values()]}::text[]) WITH ORDINALITY AS t(word, n) ORDER BY n
        ON CONFLICT (user_profile_id, lower(word)) DO NOTHING`;
    }
    return notify(deps, tx, user);
  });
}

/** Removes the given words, ignoring case; returns the new list. */
export async function doRemoveAlertWords(
  deps: Deps,
  user: Pick<UserProfile, 'id' | 'realm_id'>,
  words: string[],
): Promise<string[]> {
  return transaction(deps.db, async (tx) => {
    await lockUser(tx.db, user.id);
    const lowered = [...new Set(words.map((word) => word.toLowerCase()))];
    if (lowered.length) {
      await tx.db
        .$executeRaw`DELETE FROM alert_word WHERE user_profile_id = ${user.id} AND lower(word) = ANY(${lowered}::text[])`;
    }
    return notify(deps, tx, user);
  });
}

async function notify(deps: Deps, tx: Tx, user: Pick<UserProfile, 'id' | 'realm_id'>): Promise<string[]> {
  const words = await userAlertWords(tx.db, user.id);
  await deps.bus.sendEventOnCommit(tx, user.realm_id, { type: 'alert_words', alert_words: words }, [user.id]);
  return words;
}
