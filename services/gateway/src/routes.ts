// The gateway's routing table: which service owns which path, and how callers of that path
// authenticate. First match wins. A path no rule matches is a 404; a path a rule matches
// but its service does not know is the service's 404.

import { EMOJI_DATA_PATH } from '@teamchat/domain';

export type ServiceName = 'users' | 'messages' | 'channels' | 'uploads' | 'events' | 'web';

export const SERVICE_NAMES: readonly ServiceName[] = ['users', 'messages', 'channels', 'uploads', 'events', 'web'];

/**
 * basic: HTTP Basic email:api_key, required.
 * public: no credentials needed (the realm comes from the Host header); Basic is still used if sent.
 * file: Basic, or Zulip's legacy `api_key` query parameter, or the session cookie (file downloads in <img> tags).
 * page: the web service's pages: the session cookie if a live one is sent, else anonymous.
 * webhook: Basic or the `api_key` query parameter (what a third-party tool's webhook URL can carry),
 *   the one mode where an incoming-webhook bot's key is good (Zulip's allow_webhook_access).
 * Any rule also serves /json/<x> for /api/v1/<x>, with the session cookie instead of Basic.
 */
export type AuthMode = 'basic' | 'public' | 'file' | 'page' | 'webhook';

export interface RouteRule {
  pattern: RegExp;
  service: ServiceName;
  auth: AuthMode;
  /** Long-polls: no upstream timeout. */
  longPoll?: boolean;
  /**
   * Public endpoints Zulip serves without reading the Authorization header: credentials that
   * fail there (a stale or wrong key clients send along everywhere) make the request anonymous
   * instead of a 401.
   */
  ignoreCredentials?: boolean;
  /**
   * Basic, else the session cookie, on /api/v1 itself (no CSRF token): the web app's tus uploads
   * go to /api/v1/tus/ with the browser's cookie, which Zulip's tusd hook accepts so.
   */
  sessionFallback?: boolean;
  /**
   * The methods a logged-out visitor may call on /json (Zulip's allow_anonymous_user_web): the
   * request goes on anonymous, and the service answers it if the organisation admits
   * spectators. Never on /api/v1, which Zulip 10.2 keeps for credentials.
   */
  spectators?: readonly string[];
}

const api = (path: string) => new RegExp(`^/api/v1/${path}$`);
/** A fixed path (no pattern characters but dots). */
const exactly = (path: string) => new RegExp(`^${path.replaceAll('.', '\\.')}$`);

export const ROUTES: RouteRule[] = [
  // Incoming webhooks: other tools post their events here (the messages service's webhooks/).
  { pattern: api('external/[a-z0-9_]+'), service: 'messages', auth: 'webhook' },

  // Unauthenticated entry points.
  { pattern: api('server_settings'), service: 'users', auth: 'public', ignoreCredentials: true },
  { pattern: api('fetch_api_key'), service: 'users', auth: 'public', ignoreCredentials: true },
  { pattern: api('invites/multiuse/accept'), service: 'users', auth: 'public' },
  // A reusable invitation link, {realm_url}/join/{key}/: the sign-up form and its submission.
  { pattern: /^\/join\/[^/]+\/?$/, service: 'users', auth: 'public' },
  // The unicode emoji table (register's server_emoji_data_url).
  { pattern: exactly(EMOJI_DATA_PATH), service: 'messages', auth: 'public' },

  // Event queues.
  { pattern: api('register'), service: 'events', auth: 'basic', spectators: ['POST'] },
  { pattern: api('events'), service: 'events', auth: 'basic', longPoll: true },

  // Messages, flags, typing, drafts. Spectators read web-public ones.
  { pattern: api('messages'), service: 'messages', auth: 'basic', spectators: ['GET'] },
  { pattern: api('messages/[0-9]+'), service: 'messages', auth: 'basic', spectators: ['GET'] },
  { pattern: api('messages(/.*)?'), service: 'messages', auth: 'basic' },
  { pattern: api('mark_all_as_read|mark_stream_as_read|mark_topic_as_read'), service: 'messages', auth: 'basic' },
  { pattern: api('typing'), service: 'messages', auth: 'basic' },
  { pattern: api('drafts(/.*)?'), service: 'messages', auth: 'basic' },
  { pattern: api('scheduled_messages(/.*)?'), service: 'messages', auth: 'basic' },
  { pattern: api('calls/bigbluebutton/create'), service: 'messages', auth: 'basic' },
  // The join link create hands out: a browser page, opened with the session.
  { pattern: exactly('/calls/bigbluebutton/join'), service: 'messages', auth: 'page' },
  { pattern: api('submessage'), service: 'messages', auth: 'basic' },

  // Channels, subscriptions, topics.
  { pattern: api('streams(/.*)?'), service: 'channels', auth: 'basic' },
  { pattern: api('channel_folders(/.*)?'), service: 'channels', auth: 'basic' },
  { pattern: api('default_streams'), service: 'channels', auth: 'basic' },
  { pattern: api('get_stream_id'), service: 'channels', auth: 'basic' },
  { pattern: api('user_topics'), service: 'channels', auth: 'basic' },
  { pattern: api('users/me/subscriptions(/.*)?'), service: 'channels', auth: 'basic' },
  { pattern: api('users/me/[0-9]+/topics'), service: 'channels', auth: 'basic', spectators: ['GET'] },
  { pattern: api('users/[0-9]+/subscriptions/[0-9]+'), service: 'channels', auth: 'basic' },

  // Uploads and files.
  { pattern: api('user_uploads(/[0-9]+/.+)?'), service: 'uploads', auth: 'basic' },
  { pattern: api('attachments(/.*)?'), service: 'uploads', auth: 'basic' },
  { pattern: api('tus(/.*)?'), service: 'uploads', auth: 'basic', sessionFallback: true },
  // A temporary file URL: its token is the permission.
  { pattern: /^\/user_uploads\/temporary\/.+$/, service: 'uploads', auth: 'public' },
  { pattern: /^\/user_uploads\/.+$/, service: 'uploads', auth: 'file' },
  // Custom emoji (the uploads service keeps their images) and the files served publicly by
  // unguessable path, as Zulip's /user_avatars/.
  { pattern: api('realm/emoji/.+'), service: 'uploads', auth: 'basic' },
  { pattern: /^\/user_avatars\/.+$/, service: 'uploads', auth: 'public' },
  // A user's avatar by id or email: a redirect to its current URL, for <img> tags (the users service).
  { pattern: /^\/avatar\/.+$/, service: 'users', auth: 'file' },
  // Data exports: their archives live in the uploads storage.
  { pattern: api('export/realm(/.*)?'), service: 'uploads', auth: 'basic' },

  // Users, groups, invitations, realm configuration, personal settings: the users service.
  { pattern: api('users(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('bots(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('bot_storage'), service: 'users', auth: 'basic' },
  { pattern: api('user_groups(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('invites(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('navigation_views(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('realm(/.*)?'), service: 'users', auth: 'basic' },
  { pattern: api('settings'), service: 'users', auth: 'basic' },
  // The web app's slash commands that change one's settings.
  { pattern: api('zcommand'), service: 'users', auth: 'basic' },
  { pattern: api('saved_snippets(/.*)?'), service: 'users', auth: 'basic' },
  // A test push notification, through the bouncer (the users service keeps the device tokens).
  { pattern: api('mobile_push/test_notification'), service: 'users', auth: 'basic' },

  // The pages around Zulip's web app (the web service): home, login, logout, password reset,
  // and the app's static files (no session needed).
  { pattern: /^\/(login\/)?$/, service: 'web', auth: 'page' },
  { pattern: /^\/accounts\/.*$/, service: 'web', auth: 'page' },
  { pattern: /^\/reset\/.*$/, service: 'web', auth: 'page' },
  { pattern: /^\/static\/.+$/, service: 'web', auth: 'public', ignoreCredentials: true },
];

export function matchRoute(path: string): RouteRule | undefined {
  return ROUTES.find((rule) => rule.pattern.test(path));
}
