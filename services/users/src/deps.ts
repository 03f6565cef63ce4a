import type { BaseDeps } from '@teamchat/runtime';

/** The common dependencies, and where the services the users service calls are. */
export interface UsersDeps extends BaseDeps {
  serviceUrls: {
    /** The channels service: new accounts' subscriptions (invitation links). */
    channels: string;
  };
}
