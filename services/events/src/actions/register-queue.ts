// Registering an event queue, in Zulip's race-free order: the queue exists (and is listed for
// its user) before the state is read, so every event committed after that read reaches it;
// the state is read in ONE repeatable-read transaction whose snapshot is recorded with the
// queue, so every event whose change the state already shows is dropped from it (now, or
// when it arrives later). Events without a transaction (typing) are always delivered.

import crypto from 'node:crypto';
import type { Requester } from '@teamchat/core';
import { Prisma } from '@teamchat/db';
import {
  allowsSpectators,
  loadActor,
  spectatorRefused,
  spectatorSettingsUser,
  ZULIP_FEATURE_LEVEL,
  ZULIP_MERGE_BASE,
  ZULIP_VERSION,
} from '@teamchat/domain';
import { fetchInitialState, sectionsFor, STATE_SECTIONS } from '@teamchat/state';
import type { EventsDeps } from '../deps';
import { isRealmWide, type QueueRequest, type SpectatorRequest } from '../lib/queue-options';
import { parseSnapshot } from '../lib/snapshot';
import { completeStandbySnapshot } from '../lib/standby-snapshot';

export interface RegisteredQueue {
  queueId: string;
  /** The register response's state keys (empty when registered without state). */
  state: Record<string, unknown>;
}

/**
 * Keeps the user within EVENTS_MAX_QUEUES_PER_USER live queues once `queueId` exists: each
 * queue gets a copy of every event of its user for up to its lifespan (7 days at most), so
 * their number is bounded. The least recently polled go first (queues of closed clients).
 */
async function collectExcessQueues(deps: EventsDeps, requester: Requester, queueId: string): Promise<void> {
  const limit = deps.events.config.EVENTS_MAX_QUEUES_PER_USER;
  try {
    const collected = await deps.events.store.collectBeyondLimit(requester.userId, requester.realmId, limit, queueId);
    if (collected.length) {
      const fields = { user_id: requester.userId, collected: collected.length, limit };
      deps.logger.info(fields, 'event queues over the per-user limit collected');
    }
  } catch (error) {
    // The new queue is fine; the next registration collects what this one could not.
    deps.logger.warn({ err: error, user_id: requester.userId }, 'collecting excess event queues failed');
  }
}

/** Creates a queue that receives everything from now on, without initial state (GET /events without queue_id). */
export async function doCreateQueue(deps: EventsDeps, requester: Requester, request: QueueRequest): Promise<string> {
  const queueId = crypto.randomUUID();
  await deps.events.store.create(queueId, request.descriptor, {
    realmWide: isRealmWide(request.descriptor, requester.role),
    pendingSnapshot: false,
  });
  await collectExcessQueues(deps, requester, queueId);
  return queueId;
}

export async function doRegisterQueue(
  deps: EventsDeps,
  requester: Requester,
  request: QueueRequest,
): Promise<RegisteredQueue> {
  const { store } = deps.events;
  const queueId = crypto.randomUUID();
  await store.create(queueId, request.descriptor, {
    realmWide: isRealmWide(request.descriptor, requester.role),
    pendingSnapshot: true,
  });
  await collectExcessQueues(deps, requester, queueId);
  try {
    // The read replica may serve it once it has replayed everything committed until now (the
    // queue exists now: events published before are not in it, so the state must show them),
    // which includes the requester's own last write.
    const server = deps.reads.upToNow(deps.env.DATABASE_REPLICA_REGISTER_WAIT_MS);
    const { snapshot, state } = await deps.reads.run(server, (source) =>
      source.$transaction(
        async (db) => {
          // First statement: the transaction's snapshot is taken here and every section reads through it.
          const [row] = await db.$queryRaw<{ snapshot: string; standby: boolean }[]>`
          SELECT pg_current_snapshot()::text AS snapshot, pg_is_in_recovery() AS standby`;
          const printed = parseSnapshot(row.snapshot);
          const snapshot = row.standby ? await completeStandbySnapshot(db, printed) : printed;
          // loadActor: an account deactivated since the gateway let this request through is refused.
          const { user, realm } = await loadActor(db, requester.userId);
          const sections = sectionsFor(STATE_SECTIONS, request.fetchEventTypes);
          const state = await fetchInitialState(sections, {
            db,
            realm,
            user,
            options: request.registerOptions,
            scheme: deps.env.EXTERNAL_SCHEME,
            serverSecret: deps.env.INTERNAL_JWT_SECRET,
            webPublicStreamsEnabled: deps.env.WEB_PUBLIC_STREAMS_ENABLED,
            realmStateCache: deps.events.realmStateCache,
          });
          return { snapshot, state };
        },
        { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 60_000, maxWait: 10_000 },
      ),
    );
    await store.setSnapshot(queueId, snapshot);
    return {
      queueId,
      state: {
        zulip_version: ZULIP_VERSION,
        zulip_feature_level: ZULIP_FEATURE_LEVEL,
        zulip_merge_base: ZULIP_MERGE_BASE,
        ...state,
      },
    };
  } catch (error) {
    await store.delete(queueId, requester.userId, requester.realmId).catch(() => undefined);
    throw error;
  }
}

/**
 * A spectator's register (Zulip's do_events_register without a user): the state of the
 * realm's web-public channels, read in one snapshot, and no queue (queue_id null, no
 * last_event_id): spectators do not get events. Refused unless the realm admits spectators.
 */
export async function doRegisterSpectator(
  deps: EventsDeps,
  realmId: number,
  request: SpectatorRequest,
): Promise<Record<string, unknown>> {
  const state = await deps.db.$transaction(
    async (db) => {
      const realm = await db.realm.findUnique({ where: { id: realmId } });
      if (!realm || !(await allowsSpectators(db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED))) throw spectatorRefused();
      // Zulip's get_default_language_for_anonymous_user: the language cookie's, else the organisation's.
      const user = spectatorSettingsUser(realm, request.language ?? realm.default_language);
      return fetchInitialState(sectionsFor(STATE_SECTIONS, request.fetchEventTypes), {
        db,
        realm,
        user,
        spectator: true,
        options: request.registerOptions,
        scheme: deps.env.EXTERNAL_SCHEME,
        serverSecret: deps.env.INTERNAL_JWT_SECRET,
        webPublicStreamsEnabled: deps.env.WEB_PUBLIC_STREAMS_ENABLED,
      });
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 60_000, maxWait: 10_000 },
  );
  return {
    queue_id: null,
    zulip_version: ZULIP_VERSION,
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_merge_base: ZULIP_MERGE_BASE,
    ...state,
  };
}
