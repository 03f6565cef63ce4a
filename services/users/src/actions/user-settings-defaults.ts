// The organisation's defaults for new users' settings (Zulip's do_set_realm_user_default_setting):
// each changed setting is stored in realm.user_settings_defaults and announced to everyone as a
// realm_user_settings_defaults update event. Existing users' own settings are not touched.

import type { ZulipEventOf } from '@teamchat/bus';
import { transaction } from '@teamchat/db';
import { realmUserSettingsDefaults, lockRealm } from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import type { SettingValue } from '../lib/settings';
import { activeUserIds } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export async function doSetRealmUserDefaultSettings(
  deps: Deps,
  realmId: number,
  settings: [string, SettingValue][],
): Promise<void> {
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const realm = await tx.db.realm.findUniqueOrThrow({ where: { id: realmId } });
    const current = realmUserSettingsDefaults(realm) as Record<string, unknown>;
    const changed = settings.filter(([name, value]) => current[name] !== value);
    if (changed.length === 0) return;
    await tx.db.$executeRaw`
      UPDATE realm SET user_settings_defaults = user_settings_defaults || ${JSON.stringify(Object.fromEntries(changed))}::jsonb
      WHERE id = ${realmId}`;
    const audience = await activeUserIds(tx.db, realmId);
    for (const [property, value] of changed) {
      const event: ZulipEventOf<'realm_user_settings_defaults'> = {
        type: 'realm_user_settings_defaults',
        op: 'update',
        property,
        value,
      };
      await deps.bus.sendEventOnCommit(tx, realmId, event, audience);
    }
  });
}
