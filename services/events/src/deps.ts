import type { BaseDeps } from '@teamchat/runtime';
import type { EventsEnv } from './env';
import type { PollHub } from './lib/polls';
import type { PublicEntry } from './lib/public-entry';
import type { QueueStore } from './lib/queue-store';

/** What the event tier's views and actions use: the common dependencies plus the queues. */
export interface EventsDeps extends BaseDeps {
  events: {
    config: EventsEnv;
    store: QueueStore;
    polls: PollHub;
    /** Authenticates the requests clients send here directly (docs/adr/0006). */
    entry: PublicEntry;
  };
}
