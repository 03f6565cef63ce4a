import { optional, param, v, type AuthedContext } from '@teamchat/core';
import { groupSettingUpdate, loadActor, REALM_PERMISSION_SETTINGS, type GroupSettingUpdate } from '@teamchat/domain';
import { doUpdateRealm } from '../actions/realm-settings';
import type { UsersDeps } from '../deps';
import { requireAdministrator } from '../lib/access';
import {
  REALM_CHANNEL_SETTINGS,
  REALM_PROPERTIES,
  type RealmChannelSetting,
  type RealmSettingValue,
} from '../lib/realm-settings';

const MAX_SUBDOMAIN_LENGTH = 40;

const realmSpecs = {
  ...Object.fromEntries(Object.entries(REALM_PROPERTIES).map(([name, spec]) => [name, optional(spec.type)])),
  ...Object.fromEntries(
    Object.keys(REALM_PERMISSION_SETTINGS).map((name) => [name, optional(param.json(groupSettingUpdate))]),
  ),
  ...Object.fromEntries(REALM_CHANNEL_SETTINGS.map((name) => [name, optional(param.json(v.int()))])),
  authentication_methods: optional(param.json(v.dict(v.bool()))),
  string_id: optional(param.string({ maxLength: MAX_SUBDOMAIN_LENGTH })),
};

/** PATCH /realm (Zulip's update_realm: administrators; some settings owners only). */
export async function updateRealm({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const parsed = params.parse(realmSpecs) as Record<string, unknown>;
  const given = <T>(names: readonly string[]) =>
    Object.fromEntries(names.filter((name) => parsed[name] !== undefined).map((name) => [name, parsed[name] as T]));
  return doUpdateRealm(deps, actor, {
    properties: given<RealmSettingValue>(Object.keys(REALM_PROPERTIES)),
    groupSettings: given<GroupSettingUpdate>(Object.keys(REALM_PERMISSION_SETTINGS)),
    channels: given<number>(REALM_CHANNEL_SETTINGS) as Partial<Record<RealmChannelSetting, number>>,
    authenticationMethods: parsed.authentication_methods as Record<string, boolean> | undefined,
    stringId: parsed.string_id as string | undefined,
  });
}
