// Where uploaded avatars and the organisation's icon and logos live (Zulip's local upload
// backend's layout): storage keys under the public files' prefix, served at /user_avatars/ by
// the uploads service, and their URLs. The users service writes them; anyone shows them.

import type { Realm } from '@teamchat/db';
import { PUBLIC_FILES_PREFIX } from './realm-emoji';

/** Zulip's MAX_AVATAR_FILE_SIZE_MIB, MAX_ICON_FILE_SIZE_MIB and MAX_LOGO_FILE_SIZE_MIB. */
export const MAX_AVATAR_FILE_SIZE_MIB = 5;
export const MAX_ICON_FILE_SIZE_MIB = 5;
export const MAX_LOGO_FILE_SIZE_MIB = 5;

/** A user's uploaded avatar: the upload as sent, and the 100 px and 500 px PNGs clients show. */
export function uploadedAvatarKeys(realmId: number, avatarKey: string) {
  const base = `${PUBLIC_FILES_PREFIX}/${realmId}/${avatarKey}`;
  return { original: `${base}.original`, small: `${base}.png`, medium: `${base}-medium.png` };
}

/** The URL of an uploaded avatar (avatar_source "U"); the version makes a new one a new URL. */
export function uploadedAvatarUrl(realmId: number, avatarKey: string, version: number, medium = false): string {
  const keys = uploadedAvatarKeys(realmId, avatarKey);
  return `/${medium ? keys.medium : keys.small}?version=${version}`;
}

/** The organisation's uploaded icon or logo: the upload as sent and the resized PNG. */
export function realmImageKeys(realmId: number, image: 'icon' | 'logo' | 'night_logo') {
  const base = `${PUBLIC_FILES_PREFIX}/${realmId}/realm/${image}`;
  return { original: `${base}.original`, resized: `${base}.png` };
}

/** Zulip's default organisation logo (a static file of the web app). */
export const DEFAULT_REALM_LOGO_URL = '/static/images/logo/zulip-org-logo.svg?version=0';

/** Zulip's get_realm_logo_url. */
export function realmLogoUrl(
  realm: Pick<Realm, 'id' | 'logo_source' | 'logo_version' | 'night_logo_source' | 'night_logo_version'>,
  night: boolean,
): string {
  const source = night ? realm.night_logo_source : realm.logo_source;
  if (source !== 'U') return DEFAULT_REALM_LOGO_URL;
  const version = night ? realm.night_logo_version : realm.logo_version;
  return `/${realmImageKeys(realm.id, night ? 'night_logo' : 'logo').resized}?version=${version}`;
}

/** Zulip's get_realm_logo_data: the realm event's data and register's fields, by theme. */
export function realmLogoData(
  realm: Pick<Realm, 'id' | 'logo_source' | 'logo_version' | 'night_logo_source' | 'night_logo_version'>,
  night: boolean,
) {
  return night
    ? { night_logo_url: realmLogoUrl(realm, true), night_logo_source: realm.night_logo_source }
    : { logo_url: realmLogoUrl(realm, false), logo_source: realm.logo_source };
}
