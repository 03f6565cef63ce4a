// register's realm_emoji: every custom emoji of the realm, deactivated ones too (Zulip's
// realm.get_emoji()), kept current by realm_emoji events.
import { realmEmojiDict } from '@teamchat/domain';
import type { StateSection } from '../registry';
import { realmWidePart } from '../realm-wide';

export const realmEmojiSection: StateSection = {
  eventType: 'realm_emoji',
  fetch: async (ctx) => ({
    realm_emoji: await realmWidePart(ctx, 'emoji', () => realmEmojiDict(ctx.db, ctx.realm.id)),
  }),
};
