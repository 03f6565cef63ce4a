// Register's realm_playgrounds: the organisation's code playgrounds.
import { realmPlaygrounds } from '@teamchat/domain';
import type { StateSection } from '../registry';
import { realmWidePart } from '../realm-wide';

export const realmPlaygroundsSection: StateSection = {
  eventType: 'realm_playgrounds',
  fetch: async (ctx) => ({
    realm_playgrounds: await realmWidePart(ctx, 'playgrounds', () => realmPlaygrounds(ctx.db, ctx.realm.id)),
  }),
};
