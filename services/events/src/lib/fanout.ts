// Fan-out: turns a batch of intake entries (one partition, in stream order) into appends to
// every matching queue of every recipient, in one pipelined pass.
//
// Exactly once: each append carries the entry's stream id and the queue refuses ids at or
// below the newest one it applied, so re-processing an entry (after a replica died between
// appending and XACK) adds nothing. Register's snapshot check runs in the same script.

import { recipientShard, type IntakeEntry, type Recipient } from '@teamchat/bus';
import type { Db } from '@teamchat/db';
import type { Logger } from '@teamchat/core';
import { eventTierMetrics } from '@teamchat/telemetry';
import { copiesFor, copyClassOf } from './event-copies';
import type { QueueDescriptor } from './queue-options';
import type { Append, AppendOutcome, Fence, QueueStore, StaleIndexEntry } from './queue-store';

/**
 * Some queue refused the batch: a newer owner of the partition already appended to it, so this
 * replica's lease is over. The batch must not be acknowledged (the new owner claims it).
 */
export class FencedError extends Error {
  constructor(
    readonly partition: number,
    readonly generation: number,
  ) {
    super(`intake partition ${partition}: lease generation ${generation} was superseded`);
  }
}

export interface StreamEntry {
  /** Redis stream id, "ms-seq". */
  id: string;
  entry: IntakeEntry;
}

interface CachedDescriptor {
  descriptor: QueueDescriptor;
  copyClass: string;
}

/** A map that keeps its `capacity` most recently used entries (Map keeps insertion order). */
class Lru<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const found = this.entries.get(key);
    if (found !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, found);
    }
    return found;
  }

  set(key: K, value: V): V {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}

function recipientId(recipient: Recipient): number {
  return typeof recipient === 'number' ? recipient : recipient.id;
}

function recipientExtras(recipient: Recipient): Record<string, unknown> {
  if (typeof recipient === 'number') return {};
  const { id: _id, ...extras } = recipient;
  return extras;
}

/**
 * Local echo (Zulip's process_message_event): the message event sent to the queue the sender
 * named with `queue_id` when sending carries `local_message_id`, the `local_id` it chose, so
 * that client replaces its locally echoed copy. No other queue (of the sender or anyone) gets it.
 */
function localEcho(entry: IntakeEntry): { queueId: string; senderId: number; localId: string } | null {
  if (entry.event.type !== 'message' || entry.echo === undefined) return null;
  return { queueId: entry.echo.queueId, senderId: entry.event.message.sender_id, localId: entry.echo.localId };
}

/** The channel of a channel message's entry (null: the entry is not one). */
function channelOf(entry: IntakeEntry): number | null {
  if (entry.event.type !== 'message' || entry.event.message.type !== 'stream') return null;
  return entry.event.message.stream_id ?? null;
}

function isStreamMessage(entry: IntakeEntry): boolean {
  return channelOf(entry) !== null;
}

/**
 * Whether realm-wide queues may take the entry: a public channel's message. The producer says
 * whether the channel is private (entry.inviteOnly); `publicStreams` answers for entries written
 * before it did (relayed from an older producer's outbox rows).
 */
function reachesRealmWide(entry: IntakeEntry, publicStreams: Set<number>): boolean {
  const streamId = channelOf(entry);
  if (streamId === null) return false;
  return entry.inviteOnly === undefined ? publicStreams.has(streamId) : !entry.inviteOnly;
}

/** What a batch needs to know about its queues to build their appends. */
interface Audience {
  queuesByUser: Map<number, string[]>;
  realmWide: Map<number, string[]>;
  publicStreams: Set<number>;
  descriptors: Map<string, CachedDescriptor | null>;
  /** The lease the batch was read under (none: appends are not fenced, as in tests). */
  fence?: Fence;
}

export class Fanout {
  /** Descriptors never change once a queue exists, so each replica keeps the ones it met. */
  private readonly descriptors = new Lru<string, CachedDescriptor>(100_000);
  /** Each user's queues as their index listed them at the last batch that reached the user. */
  private readonly userQueues = new Lru<number, string[]>(100_000);
  private readonly metrics = eventTierMetrics();

  constructor(
    private readonly store: QueueStore,
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /**
   * Appends the batch's events to their queues; resolves once Redis has them all. Rejects with
   * FencedError when a queue refused them because `fence` is no longer the partition's lease.
   */
  async apply(batch: StreamEntry[], fence?: Fence): Promise<void> {
    if (batch.length === 0) return;
    const userIds = [...new Set(batch.flatMap(({ entry }) => entry.users.map(recipientId)))];
    if (!batch.some(({ entry }) => isStreamMessage(entry)) && (await this.applyToKnownQueues(batch, userIds, fence))) {
      this.observeLag(batch);
      return;
    }

    const queuesByUser = await this.store.queuesOfUsers(userIds);
    this.rememberUserQueues(queuesByUser);
    // Realm-wide queues (all_public_streams, narrows) also see public-channel messages.
    const realmsWithStreamMessages = [
      ...new Set(batch.filter(({ entry }) => isStreamMessage(entry)).map(({ entry }) => entry.realmId)),
    ];
    const realmWide = realmsWithStreamMessages.length
      ? await this.store.realmWideQueues(realmsWithStreamMessages)
      : new Map<number, string[]>();
    const publicStreams = await this.publicStreamsAmong(batch, realmWide);

    const allQueueIds = new Set<string>();
    for (const ids of queuesByUser.values()) for (const id of ids) allQueueIds.add(id);
    for (const ids of realmWide.values()) for (const id of ids) allQueueIds.add(id);
    const audience = {
      queuesByUser,
      realmWide,
      publicStreams,
      descriptors: await this.loadDescriptors([...allQueueIds]),
      fence,
    };
    await this.appendAll(this.plan(batch, audience), audience);
    this.observeLag(batch);
  }

  /**
   * The common case in one round trip: when every recipient's queues are known from earlier
   * batches (and no realm-wide queue can be concerned), their appends go to Redis together with
   * the re-read of the recipients' indexes. Queues the indexes list that were not known (a
   * client registered meanwhile) get the batch right after; none of them got any of it yet, so
   * each queue still gets the batch's entries once and in order. Returns false (nothing done)
   * when something is not known.
   */
  private async applyToKnownQueues(
    batch: StreamEntry[],
    userIds: number[],
    fence: Fence | undefined,
  ): Promise<boolean> {
    const known = new Map<number, string[]>();
    const descriptors = new Map<string, CachedDescriptor | null>();
    for (const userId of userIds) {
      const queueIds = this.userQueues.get(userId);
      if (!queueIds) return false;
      for (const queueId of queueIds) {
        const cached = this.descriptors.get(queueId);
        if (!cached) return false;
        descriptors.set(queueId, cached);
      }
      known.set(userId, queueIds);
    }
    const noRealmWide = { realmWide: new Map<number, string[]>(), publicStreams: new Set<number>(), fence };
    const audience: Audience = { queuesByUser: known, descriptors, ...noRealmWide };
    const [listed] = await Promise.all([
      this.store.queuesOfUsers(userIds),
      this.appendAll(this.plan(batch, audience), audience),
    ]);
    this.rememberUserQueues(listed);

    const unknown = new Set<string>();
    for (const [userId, queueIds] of listed) {
      const before = new Set(known.get(userId));
      for (const queueId of queueIds) if (!before.has(queueId)) unknown.add(queueId);
    }
    if (unknown.size === 0) return true;
    const fresh = await this.loadDescriptors([...unknown]);
    const freshAudience: Audience = { queuesByUser: listed, descriptors: fresh, ...noRealmWide };
    await this.appendAll(this.plan(batch, freshAudience, unknown), freshAudience);
    return true;
  }

  private rememberUserQueues(queuesByUser: Map<number, string[]>): void {
    for (const [userId, queueIds] of queuesByUser) this.userQueues.set(userId, queueIds);
  }

  /**
   * One append per queue (of `only`, when given), carrying its share of every entry in stream
   * order: a queue gets the batch's events in one script, and a parked poll all of them in one answer.
   */
  private plan(
    batch: StreamEntry[],
    { queuesByUser, realmWide, publicStreams, descriptors }: Audience,
    only?: Set<string>,
  ): Append[] {
    const appendsByQueue = new Map<string, Append>();
    for (const { id, entry } of batch) {
      // Which queues get this entry, with the recipient's own fields (null: not a recipient).
      const targets = new Map<string, Record<string, unknown> | null>();
      if (reachesRealmWide(entry, publicStreams)) {
        for (const queueId of realmWide.get(entry.realmId) ?? []) {
          // A sharded entry serves the realm-wide queues of its shard's users only (each shard got a copy).
          const owner = descriptors.get(queueId)?.descriptor.userId;
          if (entry.shard && (owner === undefined || recipientShard(owner, entry.shard.of) !== entry.shard.index))
            continue;
          targets.set(queueId, null);
        }
      }
      for (const recipient of entry.users) {
        for (const queueId of queuesByUser.get(recipientId(recipient)) ?? [])
          targets.set(queueId, recipientExtras(recipient));
      }
      const echo = localEcho(entry);
      const copies = new Map<string, string[]>();
      for (const [queueId, recipientFields] of targets) {
        if (only && !only.has(queueId)) continue;
        const cached = descriptors.get(queueId);
        if (!cached || cached.descriptor.realmId !== entry.realmId) continue;
        // The sender's own queue gets its own copy (the recipient fields make the copy key differ).
        const extras =
          echo && echo.queueId === queueId && cached.descriptor.userId === echo.senderId
            ? { ...recipientFields, local_message_id: echo.localId }
            : recipientFields;
        // Queues of the same kind and recipient fields get the same JSON: build it once.
        const copyKey = `${cached.copyClass}\u0000${extras === null ? 'null' : JSON.stringify(extras)}`;
        let events = copies.get(copyKey);
        if (!events) {
          events = copiesFor(cached.descriptor, entry.event, extras).map((event) => JSON.stringify(event));
          copies.set(copyKey, events);
        }
        if (events.length === 0) continue;
        let append = appendsByQueue.get(queueId);
        if (!append) appendsByQueue.set(queueId, (append = { queueId, groups: [] }));
        append.groups.push({ entryId: id, xid: entry.xid, events });
      }
    }
    return [...appendsByQueue.values()];
  }

  /** Runs the appends; removes the queues found gone (or dropped for their size) from the indexes. */
  private async appendAll(appends: Append[], { queuesByUser, realmWide, descriptors, fence }: Audience): Promise<void> {
    const gone: StaleIndexEntry[] = [];
    for (const [queueId, cached] of descriptors) {
      if (!cached) gone.push(...this.staleIndexEntries(queueId, queuesByUser, realmWide));
    }
    const results = await this.store.append(appends, fence);
    this.observe(results);
    const fenced = results.filter(({ status }) => status === 'fenced').length;
    if (fenced > 0) {
      this.metrics.appendsFenced.inc(fenced);
      throw new FencedError(fence!.partition, fence!.generation);
    }
    results.forEach(({ status }, i) => {
      if (status !== 'gone' && status !== 'dropped') return;
      const queueId = appends[i].queueId;
      const cached = descriptors.get(queueId);
      this.descriptors.delete(queueId);
      if (cached) gone.push({ queueId, userId: cached.descriptor.userId, realmId: cached.descriptor.realmId });
      if (status === 'dropped')
        this.logger.warn({ queue_id: queueId }, 'event queue dropped: too many unacknowledged events');
    });
    await this.store.forget(gone);
  }

  /** Events appended. */
  private observe(results: AppendOutcome[]): void {
    let appended = 0;
    for (const result of results) appended += result.appended;
    if (appended) this.metrics.eventsFannedOut.inc(appended);
  }

  /** How long each entry took from entering the intake stream to being in all its queues. */
  private observeLag(batch: StreamEntry[]): void {
    const now = Date.now();
    for (const { id } of batch)
      this.metrics.fanoutLag.observe(Math.max(0, now - Number(id.slice(0, id.indexOf('-')))) / 1000);
  }

  private async loadDescriptors(queueIds: string[]): Promise<Map<string, CachedDescriptor | null>> {
    const out = new Map<string, CachedDescriptor | null>();
    const missing: string[] = [];
    for (const queueId of queueIds) {
      const cached = this.descriptors.get(queueId);
      if (cached) out.set(queueId, cached);
      else missing.push(queueId);
    }
    const loaded = await this.store.descriptors(missing);
    missing.forEach((queueId, i) => {
      const descriptor = loaded[i];
      out.set(
        queueId,
        descriptor ? this.descriptors.set(queueId, { descriptor, copyClass: copyClassOf(descriptor) }) : null,
      );
    });
    return out;
  }

  private staleIndexEntries(
    queueId: string,
    queuesByUser: Map<number, string[]>,
    realmWide: Map<number, string[]>,
  ): StaleIndexEntry[] {
    const entries: StaleIndexEntry[] = [];
    for (const [userId, ids] of queuesByUser) if (ids.includes(queueId)) entries.push({ queueId, userId });
    for (const [realmId, ids] of realmWide) if (ids.includes(queueId)) entries.push({ queueId, realmId });
    return entries;
  }

  /**
   * Public channels among the batch's channel messages whose entry does not say whether their
   * channel is private (written before producers said it), when some realm-wide queue could want them.
   */
  private async publicStreamsAmong(batch: StreamEntry[], realmWide: Map<number, string[]>): Promise<Set<number>> {
    const streamIds = [
      ...new Set(
        batch
          .filter(({ entry }) => entry.inviteOnly === undefined && (realmWide.get(entry.realmId)?.length ?? 0) > 0)
          .map(({ entry }) => channelOf(entry))
          .filter((streamId) => streamId !== null),
      ),
    ];
    if (streamIds.length === 0) return new Set();
    const rows = await this.db.stream.findMany({
      where: { id: { in: streamIds }, invite_only: false },
      select: { id: true },
    });
    return new Set(rows.map((row) => row.id));
  }
}
