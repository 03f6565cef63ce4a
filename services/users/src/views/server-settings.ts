import type { ViewContext } from '@teamchat/core';
import {
  allowsSpectators,
  escapeHtml,
  realmIconUrl,
  realmUrl,
  ZULIP_FEATURE_LEVEL,
  ZULIP_MERGE_BASE,
  ZULIP_VERSION,
} from '@teamchat/domain';
import { BouncerClient } from '@teamchat/notifications';
import type { UsersDeps } from '../deps';

/**
 * GET /server_settings: what a client needs before logging in. Needs no authentication;
 * the realm is the one the request's Host names. Real clients call it first.
 */
export async function getServerSettings({ deps, realmId }: ViewContext<UsersDeps>) {
  const realm = await deps.db.realm.findUnique({ where: { id: realmId } });
  const settings = {
    authentication_methods: {
      password: true,
      dev: false,
      email: true,
      ldap: false,
      remoteuser: false,
      github: false,
      azuread: false,
      gitlab: false,
      apple: false,
      google: false,
      saml: false,
      'openid connect': false,
    },
    external_authentication_methods: [],
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_version: ZULIP_VERSION,
    zulip_merge_base: ZULIP_MERGE_BASE,
    // Zulip's push_notifications_configured(): the bouncer's URL and this server's credentials are set.
    push_notifications_enabled: BouncerClient.configured(deps.notifications),
    is_incompatible: false,
    email_auth_enabled: true,
    require_email_format_usernames: true,
  };
  if (!realm) return settings;
  const url = realmUrl(realm, deps.env.EXTERNAL_SCHEME);
  return {
    ...settings,
    realm_uri: url,
    realm_url: url,
    realm_name: realm.name,
    realm_icon: realmIconUrl(realm),
    realm_description: realm.description ? `<p>${escapeHtml(realm.description)}</p>` : '',
    // Whether its home page shows logged-out visitors the app (allowsSpectators).
    realm_web_public_access_enabled: await allowsSpectators(deps.db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED),
  };
}
