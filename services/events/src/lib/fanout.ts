// Fan-out: turns a batch of intake entries (one partition, in stream order) into appends to
// every matching queue of every recipient, in one pipelined pass.
//
// Exactly once: each append carries the entry's stream id and the queue refuses ids at or
// below the newest one it applied, so re-processing an entry (after a replica died between
// appending and XACK) adds nothing. Register's snapshot check runs in the same script.

import type { IntakeEntry, Recipient } from '@teamchat/bus';
import type { Db } from '@teamchat/db';
import type { Logger } from '@teamchat/core';
import { eventTierMetrics } from '@teamchat/telemetry';
import { copiesFor, copyClassOf } from './event-copies';
import type { QueueDescriptor } from './queue-options';
import type { Append, AppendResult, QueueStore, StaleIndexEntry } from './queue-store';

export interface StreamEntry {
  /** Redis stream id, "ms-seq". */
  id: string;
  entry: IntakeEntry;
}

interface CachedDescriptor {
  descriptor: QueueDescriptor;
  copyClass: string;
}

/** Descriptors never change once a queue exists, so each replica keeps the ones it met. */
class DescriptorCache {
  private readonly entries = new Map<string, CachedDescriptor>();

  constructor(private readonly capacity: number) {}

  get(queueId: string): CachedDescriptor | undefined {
    const found = this.entries.get(queueId);
    if (found) {
      this.entries.delete(queueId);
      this.entries.set(queueId, found);
    }
    return found;
  }

  set(queueId: string, descriptor: QueueDescriptor): CachedDescriptor {
    const cached = { descriptor, copyClass: copyClassOf(descriptor) };
    this.entries.set(queueId, cached);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return cached;
  }

  delete(queueId: string): void {
    this.entries.delete(queueId);
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

function isStreamMessage(entry: IntakeEntry): boolean {
  return entry.event.type === 'message' && (entry.event.message as { type?: string } | undefined)?.type === 'stream';
}

export class Fanout {
  private readonly descriptors = new DescriptorCache(100_000);
  private readonly metrics = eventTierMetrics();

  constructor(
    private readonly store: QueueStore,
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  /** Appends the batch's events to their queues; resolves once Redis has them all. */
  async apply(batch: StreamEntry[]): Promise<void> {
    if (batch.length === 0) return;
    const userIds = [...new Set(batch.flatMap(({ entry }) => entry.users.map(recipientId)))];
    const queuesByUser = await this.store.queuesOfUsers(userIds);

    // Realm-wide queues (all_public_streams, narrows) also see public-channel messages.
    const realmsWithStreamMessages = [...new Set(batch.filter(({ entry }) => isStreamMessage(entry)).map(({ entry }) => entry.realmId))];
    const realmWide = realmsWithStreamMessages.length ? await this.store.realmWideQueues(realmsWithStreamMessages) : new Map<number, string[]>();
    const publicStreams = await this.publicStreamsAmong(batch, realmWide);

    const allQueueIds = new Set<string>();
    for (const ids of queuesByUser.values()) for (const id of ids) allQueueIds.add(id);
    for (const ids of realmWide.values()) for (const id of ids) allQueueIds.add(id);
    const descriptors = await this.loadDescriptors([...allQueueIds]);

    const appends: Append[] = [];
    const gone: StaleIndexEntry[] = [];
    for (const [queueId, cached] of descriptors) {
      if (!cached) gone.push(...this.staleIndexEntries(queueId, queuesByUser, realmWide));
    }
    for (const { id, entry } of batch) {
      // Which queues get this entry, with the recipient's own fields (null: not a recipient).
      const targets = new Map<string, Record<string, unknown> | null>();
      if (isStreamMessage(entry) && publicStreams.has((entry.event.message as { stream_id: number }).stream_id)) {
        for (const queueId of realmWide.get(entry.realmId) ?? []) targets.set(queueId, null);
      }
      for (const recipient of entry.users) {
        for (const queueId of queuesByUser.get(recipientId(recipient)) ?? []) targets.set(queueId, recipientExtras(recipient));
      }
      const copies = new Map<string, string[]>();
      for (const [queueId, extras] of targets) {
        const cached = descriptors.get(queueId);
        if (!cached || cached.descriptor.realmId !== entry.realmId) continue;
        // Queues of the same kind and recipient fields get the same JSON: build it once.
        const copyKey = `${cached.copyClass}\u0000${extras === null ? 'null' : JSON.stringify(extras)}`;
        let events = copies.get(copyKey);
        if (!events) {
          events = copiesFor(cached.descriptor, entry.event, extras).map((event) => JSON.stringify(event));
          copies.set(copyKey, events);
        }
        if (events.length) appends.push({ queueId, entryId: id, xid: entry.xid, events });
      }
    }

    const results = await this.store.append(appends);
    this.observe(batch, appends, results);
    results.forEach((result, i) => {
      if (result !== 'gone' && result !== 'dropped') return;
      const queueId = appends[i].queueId;
      const cached = descriptors.get(queueId);
      this.descriptors.delete(queueId);
      if (cached) gone.push({ queueId, userId: cached.descriptor.userId, realmId: cached.descriptor.realmId });
      if (result === 'dropped') this.logger.warn({ queue_id: queueId }, 'event queue dropped: too many unacknowledged events');
    });
    await this.store.forget(gone);
  }

  /** Events appended, and how long each entry took from entering the intake stream to its queues. */
  private observe(batch: StreamEntry[], appends: Append[], results: AppendResult[]): void {
    let appended = 0;
    results.forEach((result, i) => {
      if (result === 'appended') appended += appends[i].events.length;
    });
    if (appended) this.metrics.eventsFannedOut.inc(appended);
    const now = Date.now();
    for (const { id } of batch) this.metrics.fanoutLag.observe(Math.max(0, now - Number(id.slice(0, id.indexOf('-')))) / 1000);
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
    missing.forEach((queueId, i) => out.set(queueId, loaded[i] ? this.descriptors.set(queueId, loaded[i]) : null));
    return out;
  }

  private staleIndexEntries(queueId: string, queuesByUser: Map<number, string[]>, realmWide: Map<number, string[]>): StaleIndexEntry[] {
    const entries: StaleIndexEntry[] = [];
    for (const [userId, ids] of queuesByUser) if (ids.includes(queueId)) entries.push({ queueId, userId });
    for (const [realmId, ids] of realmWide) if (ids.includes(queueId)) entries.push({ queueId, realmId });
    return entries;
  }

  /** Public channels among the batch's channel messages, when some realm-wide queue could want them. */
  private async publicStreamsAmong(batch: StreamEntry[], realmWide: Map<number, string[]>): Promise<Set<number>> {
    const streamIds = [
      ...new Set(
        batch
          .filter(({ entry }) => isStreamMessage(entry) && (realmWide.get(entry.realmId)?.length ?? 0) > 0)
          .map(({ entry }) => (entry.event.message as { stream_id: number }).stream_id),
      ),
    ];
    if (streamIds.length === 0) return new Set();
    const rows = await this.db.stream.findMany({ where: { id: { in: streamIds }, invite_only: false }, select: { id: true } });
    return new Set(rows.map((row) => row.id));
  }
}
