// Images nobody uploaded (users' avatars of source "G", the organisation's icon) and where they
// come from: Gravatar, or, on a server with Gravatar off (Zulip's ENABLE_GRAVATAR = False: a
// server on a closed network, or one that must not tell a third party its users' addresses),
// the server's own default avatar. With Gravatar off, clients cannot compute avatars either, so
// client_gravatar is ignored (Zulip's get_avatar_field). The setting is the server's, one per
// process: every process reads ENABLE_GRAVATAR at boot (@teamchat/runtime's createBaseDeps).
import { createHash } from 'node:crypto';

/** The server's default avatar, one of the web app's static files (Zulip's DEFAULT_AVATAR_FILE). */
export const DEFAULT_AVATAR_PATH = '/static/images/default-avatar.png';

/** Zulip's MEDIUM_AVATAR_SIZE: the medium avatar's side in pixels. */
const MEDIUM_AVATAR_SIZE = 500;

let gravatarEnabled = true;

/** Sets the server's ENABLE_GRAVATAR (at boot). */
export function setGravatarEnabled(enabled: boolean): void {
  gravatarEnabled = enabled;
}

export function isGravatarEnabled(): boolean {
  return gravatarEnabled;
}

/**
 * The generated image for `key` (an email, a realm's string id): Gravatar's identicon, or the
 * server's default avatar when Gravatar is off. `medium`: the 500 px one (the default avatar has
 * one size); `version`: appended so clients drop a cached copy when it changes.
 */
export function generatedImageUrl(key: string, options: { medium?: boolean; version?: number } = {}): string {
  let url = DEFAULT_AVATAR_PATH;
  if (gravatarEnabled) {
    const hash = createHash('md5').update(key.trim().toLowerCase()).digest('hex');
    url = `https://secure.gravatar.com/avatar/${hash}?d=identicon${options.medium ? `&s=${MEDIUM_AVATAR_SIZE}` : ''}`;
  }
  if (options.version === undefined) return url;
  return `${url}${url.includes('?') ? '&' : '?'}version=${options.version}`;
}

/**
 * Whether a client that computes avatars itself (client_gravatar) gets a null avatar_url for
 * this user: their avatar is Gravatar's and their email visible to everyone (Zulip's
 * format_user_row and get_avatar_field).
 */
export function clientComputesAvatar(clientGravatar: boolean, avatarSource: string, emailPublic: boolean): boolean {
  return clientGravatar && gravatarEnabled && avatarSource === 'G' && emailPublic;
}
