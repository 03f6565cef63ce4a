import type { NotificationsConfig } from '@teamchat/notifications';
import type { BaseDeps } from '@teamchat/runtime';
import type { ObjectStorage } from '@teamchat/storage';
import type { LoginThrottle } from './lib/login-throttle';
import type { PresenceCache } from './lib/presence-cache';

/** The common dependencies, and where the services the users service calls are. */
export interface UsersDeps extends BaseDeps {
  serviceUrls: {
    /** The channels service: new accounts' subscriptions (invitation links). */
    channels: string;
    /** The messages service: a muted user's unread messages are marked read there. */
    messages: string;
  };
  /** Password-login attempts per account and per client address (POST /fetch_api_key). */
  loginThrottle: LoginThrottle;
  /** This process's copy of the realms' presence rows (answers to presence pings). */
  presence: PresenceCache;
  /** The push notification bouncer (POST /mobile_push/test_notification). */
  notifications: NotificationsConfig;
  /** The uploads storage: avatars and the organisation's icon and logo are written there. */
  storage: ObjectStorage;
}
