// The people of an organisation as incoming webhooks look them up: tools name accounts by email or
// by a user name of their own, and the message names the Zulip account if there is one.

import type { TxClient } from '@teamchat/db';
import type { WebhookPeople } from '../webhooks/integration';

type Reader = Pick<TxClient, 'userProfile' | '$queryRaw'>;

/** A LIKE pattern matching `text` literally. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

export function webhookPeople(db: Reader, realmId: number): WebhookPeople {
  return {
    async fullNameByDeliveryEmail(email) {
      // Delivery emails are stored lower-cased.
      const user = await db.userProfile.findFirst({
        where: { realm_id: realmId, delivery_email: email.trim().toLowerCase() },
        select: { full_name: true },
      });
      return user?.full_name ?? null;
    },
    async fullNameByNameOrEmailPrefix(name) {
      // Jira's guess_zulip_user_from_jira (zerver/webhooks/jira/view.py): full_name__iexact or
      // email__istartswith, among active accounts, the oldest first.
      const found = await db.$queryRaw<{ full_name: string }[]>`
        SELECT full_name FROM user_profile
        WHERE realm_id = ${realmId} AND is_active
          AND (upper(full_name) = upper(${name}) OR upper(email) LIKE upper(${likeLiteral(name) + '%'}))
        ORDER BY id LIMIT 1`;
      return found[0]?.full_name ?? null;
    },
  };
}
