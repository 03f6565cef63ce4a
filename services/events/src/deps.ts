import type { BaseDeps } from '@teamchat/runtime';
import type { RealmStateCache } from '@teamchat/state';
import type { EventsEnv } from './env';
import type { PollHub } from './lib/polls';
import type { PublicEntry } from './lib/public-entry';
import type { QueueStore } from './lib/queue-store';

/** What the event tier's views and actions use: the common dependencies plus the queues. */
export interface EventsDeps extends BaseDeps {
  events: {
    config: EventsEnv;
    store: QueueStore;
    /** Register's realm-wide parts (user list, groups...), built once per realm state version. */
    realmStateCache: RealmStateCache;
    polls: PollHub;
    /** Authenticates the requests clients send here directly (docs/adr/0006). */
    entry: PublicEntry;
  };
}
