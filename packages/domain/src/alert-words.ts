// Alert words (kept by the users service in alert_word; read by register too).
import type { TxClient } from '@teamchat/db';

/** A user's alert words, oldest first (Zulip's user_alert_words). */
export async function userAlertWords(db: Pick<TxClient, 'alertWord'>, userId: number): Promise<string[]> {
  const rows = await db.alertWord.findMany({
    where: { user_profile_id: userId },
    orderBy: { id: 'asc' },
    select: { word: true },
  });
  return rows.map((row) => row.word);
}
