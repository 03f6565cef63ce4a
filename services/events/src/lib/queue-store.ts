// The event queues in Redis. Every structure of a queue shares the hash tag {q:<id>}, so a
// queue lives in one Redis Cluster slot and each operation on it is one atomic Lua script:
//
//   {q:ID}:m  hash   u user id, r realm id, d descriptor (JSON), l lifespan ms,
//                    n next event id, p newest pruned (acknowledged) id,
//                    q poll sequence (the latest poll owns the queue), k sequence of the poll
//                    parked on the empty queue (the next append wakes it with its events),
//                    kt when (Redis time, ms) that poll parked: a mark older than the park
//                    allowance is a poll nobody holds any more (its client or replica went away),
//                    h high-water mark: the newest intake entry applied (stream id "ms-seq"),
//                    sp "1" while register has not read its state yet,
//                    sa/sb/sc register's snapshot (xmin, xmax, ",xip,xip,") once it has,
//                    w "1" when listed in its realm's realm-wide index,
//                    i until when (Redis time, ms) its indexes surely list it,
//                    g<P> the newest lease generation of intake partition P that appended (fencing)
//   {q:ID}:e  list   the queued events, as final JSON with "id" first, oldest first
//   {q:ID}:x  hash   event id -> xid, for events appended while the state was being read
//
// Queue keys expire after the queue's lifespan without a poll (plus the longest parked poll).
// Indexes (user -> queues, realm -> realm-wide queues) live in other slots and may list a
// queue that is gone; whoever notices removes it. An index must outlive every queue it lists,
// however long the queue is kept alive by polls: a poll that finds the index's time running
// short (field i) lists the queue again and extends the index (refreshIndexes).

import { crossSlotPipeline, forEachMaster, isCluster, type Durability, type Redis } from '@teamchat/bus';
import type { QueueDescriptor } from './queue-options';
import type { Snapshot } from './snapshot';

/**
 * An index is extended to INDEX_TTL_FACTOR times the queue's time to live (plus a margin)
 * whenever a poll finds it could expire within that time plus the margin: one extension per
 * ~lifespan of a polled queue, and an index never expires before a queue it lists.
 */
const INDEX_TTL_FACTOR = 2;

// Redis's clock in ms, the one every expiry is measured with.
const NOW = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

// KEYS meta. ARGV user id, realm id, descriptor, lifespan ms, pending snapshot, realm-wide,
// index ttl ms, ttl ms (the lifespan plus the time register may take before the first poll).
const CREATE = `${NOW}
redis.call('HSET', KEYS[1], 'u', ARGV[1], 'r', ARGV[2], 'd', ARGV[3], 'l', ARGV[4], 'n', 0, 'p', -1, 'q', 0, 'w', ARGV[6], 'i', nowMs() + tonumber(ARGV[7]))
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'sp', '1') end
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return 1
`;

// An xid is part of a snapshot's state when it committed before the snapshot was taken.
const VISIBLE = `
local function visible(xid, xmin, xmax, xip)
  local x = tonumber(xid)
  if x < tonumber(xmin) then return true end
  if x >= tonumber(xmax) then return false end
  return not string.find(xip, ',' .. xid .. ',', 1, true)
end
local function eventId(item)
  return tonumber(string.match(item, '^{"id":(%d+)'))
end
`;

// KEYS meta, events, xids. ARGV cap, wake channel, fence field ('' for none), lease generation,
// then one group per intake entry, in stream order: entry id, xid ('' for none), event count,
// event JSON... A group is skipped when its entry was already applied (high-water mark) or its
// change is in the queue's state (snapshot). Returns the number of events appended (0: every
// group skipped), -1 when the queue is gone, -2 when the cap was exceeded and the queue dropped,
// -3 when a newer owner of the partition (a higher lease generation) already appended here.
const APPEND = `${VISIBLE}
local f = redis.call('HMGET', KEYS[1], 'u', 'h', 'sp', 'sa', 'sb', 'sc', 'k', 'n', ARGV[3])
if not f[1] then return -1 end
if ARGV[3] ~= '' then
  if f[9] and tonumber(f[9]) > tonumber(ARGV[4]) then return -3 end
  if f[9] ~= ARGV[4] then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
end
local hms, hseq
if f[2] then
  hms, hseq = string.match(f[2], '^(%d+)-(%d+)$')
  hms = tonumber(hms)
  hseq = tonumber(hseq)
end
local firstId = tonumber(f[8])
local nextId = firstId
local newest
local length = 0
local pendingXids = false
local i = 5
while i <= #ARGV do
  local entry, xid, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local ms, seq = string.match(entry, '^(%d+)-(%d+)$')
  ms = tonumber(ms)
  seq = tonumber(seq)
  if not hms or ms > hms or (ms == hms and seq > hseq) then
    hms, hseq, newest = ms, seq, entry
    if xid == '' or not f[4] or not visible(xid, f[4], f[5], f[6]) then
      for j = 1, n do
        length = redis.call('RPUSH', KEYS[2], '{"id":' .. nextId .. ',' .. string.sub(ARGV[i + 2 + j], 2))
        if f[3] and xid ~= '' then
          redis.call('HSET', KEYS[3], nextId, xid)
          pendingXids = true
        end
        nextId = nextId + 1
      end
    end
  end
  i = i + 3 + n
end
if newest then redis.call('HSET', KEYS[1], 'h', newest) end
local count = nextId - firstId
if count == 0 then return 0 end
redis.call('HSET', KEYS[1], 'n', nextId)
if length > tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  redis.call('SPUBLISH', ARGV[2], 'x')
  return -2
end
local ttl = redis.call('PTTL', KEYS[1])
if length == count and ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
if pendingXids and ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
if f[7] then
  -- A poll is parked on an empty queue: these events are all it can be waiting for. They go
  -- in the wake-up itself (it answers without another round trip) and stay queued until acknowledged.
  redis.call('HDEL', KEYS[1], 'k')
  redis.call('SPUBLISH', ARGV[2], 'e' .. f[7] .. ':' .. table.concat(redis.call('LRANGE', KEYS[2], -count, -1), ','))
end
return count
`;

// KEYS meta, events, xids. ARGV xmin, xmax, ",xip,...," — drops the events whose change the
// state already contains and remembers the snapshot for events still to come.
const SET_SNAPSHOT = `${VISIBLE}
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local pending = redis.call('HGETALL', KEYS[3])
local drop = {}
local dropping = false
for i = 1, #pending, 2 do
  if visible(pending[i + 1], ARGV[1], ARGV[2], ARGV[3]) then
    drop[tonumber(pending[i])] = true
    dropping = true
  end
end
local dropped = 0
if dropping then
  local items = redis.call('LRANGE', KEYS[2], 0, -1)
  local ttl = redis.call('PTTL', KEYS[1])
  redis.call('DEL', KEYS[2])
  for _, item in ipairs(items) do
    if drop[eventId(item)] then dropped = dropped + 1 else redis.call('RPUSH', KEYS[2], item) end
  end
  if ttl > 0 and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
redis.call('DEL', KEYS[3])
redis.call('HDEL', KEYS[1], 'sp')
redis.call('HSET', KEYS[1], 'sa', ARGV[1], 'sb', ARGV[2], 'sc', ARGV[3])
return dropped
`;

// KEYS meta, events, xids. ARGV mode, user id, last event id or poll sequence, park allowance ms,
// wake channel, index margin ms.
//   read / readpark: a new poll. Acknowledges events up to ARGV[3], finishes a poll parked
//     elsewhere, returns the queued events; readpark parks this poll when there are none.
//     A last event id the queue never gave out means Redis lost the queue's recent history (a
//     restart that rolled writes back, a failover to a lagging replica): the queue is deleted
//     and answered as gone, so the client registers again and loses nothing.
//   park / wake / heartbeat: a parked poll (ARGV[3] = its sequence); 'superseded' once a newer
//     poll came; heartbeat allocates an event id for the heartbeat when nothing is queued.
// Returns {status, events JSON array | heartbeat id, poll sequence, index refresh}: the refresh
// (read modes only) is '' or "<until>:<index ttl ms>:<realm-wide>:<realm id>:<queue ttl ms>" when
// the indexes must be extended to keep listing the queue for as long as this poll keeps it alive.
// Until they are (INDEXED), the queue lives no longer than they surely do, minus the margin: a
// queue that outlived its indexes would silently miss its events.
const POLL = `${NOW}
local f = redis.call('HMGET', KEYS[1], 'u', 'n', 'p', 'k', 'l', 'q', 'i', 'w', 'r')
if not f[1] or f[1] ~= ARGV[2] then return {'bad'} end
local mode = ARGV[1]
local seq
local refresh = ''
if mode == 'read' or mode == 'readpark' then
  local last = tonumber(ARGV[3])
  local pruned = tonumber(f[3])
  if last < pruned then return {'pruned'} end
  if last >= tonumber(f[2]) then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
    if f[4] then redis.call('SPUBLISH', ARGV[5], 'x') end
    return {'bad'}
  end
  if last > pruned then
    local items = redis.call('LRANGE', KEYS[2], 0, last - pruned - 1)
    local drop = 0
    for i, item in ipairs(items) do
      if tonumber(string.match(item, '^{"id":(%d+)')) <= last then drop = i else break end
    end
    if drop > 0 then redis.call('LTRIM', KEYS[2], drop, -1) end
    redis.call('HSET', KEYS[1], 'p', last)
  end
  local ttl = tonumber(f[5]) + tonumber(ARGV[4])
  local now = nowMs()
  local margin = tonumber(ARGV[6])
  local keep = ttl
  if not f[7] or tonumber(f[7]) < now + ttl + margin then
    local indexTtl = ${INDEX_TTL_FACTOR} * ttl + margin
    refresh = (now + indexTtl) .. ':' .. indexTtl .. ':' .. (f[8] or '0') .. ':' .. f[9] .. ':' .. ttl
    -- Not past what the indexes promise until they are extended (INDEXED extends the queue then).
    keep = math.max(redis.call('PTTL', KEYS[1]), (tonumber(f[7]) or 0) - margin - now)
  end
  if keep > 0 then
    redis.call('PEXPIRE', KEYS[1], keep)
    redis.call('PEXPIRE', KEYS[2], keep)
  end
  seq = redis.call('HINCRBY', KEYS[1], 'q', 1)
  if f[4] then
    redis.call('HDEL', KEYS[1], 'k')
    redis.call('SPUBLISH', ARGV[5], 's')
  end
else
  seq = tonumber(ARGV[3])
  if tonumber(f[6]) ~= seq then return {'superseded'} end
end
local items = redis.call('LRANGE', KEYS[2], 0, -1)
if #items > 0 then
  if mode ~= 'read' and mode ~= 'readpark' then redis.call('HDEL', KEYS[1], 'k') end
  return {'ok', '[' .. table.concat(items, ',') .. ']', seq, refresh}
end
if mode == 'heartbeat' then
  redis.call('HDEL', KEYS[1], 'k')
  return {'heartbeat', redis.call('HINCRBY', KEYS[1], 'n', 1) - 1, seq}
end
if mode == 'readpark' or mode == 'park' then redis.call('HSET', KEYS[1], 'k', seq, 'kt', nowMs()) end
return {'ok', '[]', seq, refresh}
`;

// KEYS meta, events. ARGV until when its indexes surely list the queue, the queue's ttl ms: the
// life the poll gave it (not recreating a deleted queue, never shortening it).
const INDEXED = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'i', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2], 'GT')
  redis.call('PEXPIRE', KEYS[2], ARGV[2], 'GT')
end
return 1
`;

// KEYS meta, events, xids. ARGV user id, wake channel, realm id. Returns 1, 0 (no such queue in
// this realm: another realm's queue is answered as one that does not exist) or -1 (another user's).
const DELETE = `
local f = redis.call('HMGET', KEYS[1], 'u', 'r')
if not f[1] or f[2] ~= ARGV[3] then return 0 end
if f[1] ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SPUBLISH', ARGV[2], 'x')
return 1
`;

export type PollMode = 'read' | 'readpark' | 'park' | 'wake' | 'heartbeat';

export type PollResult =
  | { status: 'ok'; events: string; seq: number }
  | { status: 'heartbeat'; heartbeatId: number; seq: number }
  | { status: 'bad' | 'pruned' | 'superseded' };

export type AppendResult = 'appended' | 'skipped' | 'gone' | 'dropped' | 'fenced';

/** The lease under which a fan-out batch was read: appends from an older owner are refused. */
export interface Fence {
  partition: number;
  generation: number;
}

interface QueueCommands {
  tcQueueCreate(meta: string, ...args: (string | number)[]): Promise<number>;
  tcQueueAppend(meta: string, events: string, xids: string, ...args: (string | number)[]): Promise<number>;
  tcQueueSetSnapshot(meta: string, events: string, xids: string, ...args: string[]): Promise<number>;
  tcQueuePoll(meta: string, events: string, xids: string, ...args: (string | number)[]): Promise<(string | number)[]>;
  tcQueueDelete(meta: string, events: string, xids: string, ...args: (string | number)[]): Promise<number>;
  tcQueueIndexed(meta: string, events: string, until: number, ttlMs: number): Promise<number>;
}

type Scripted = Redis & QueueCommands;
type ScriptedPipeline = ReturnType<Redis['pipeline']> & {
  [K in keyof QueueCommands]: (...args: Parameters<QueueCommands[K]>) => ScriptedPipeline;
};

export function defineQueueCommands(redis: Redis): void {
  if ('tcQueuePoll' in redis) return;
  redis.defineCommand('tcQueueCreate', { numberOfKeys: 1, lua: CREATE });
  redis.defineCommand('tcQueueAppend', { numberOfKeys: 3, lua: APPEND });
  redis.defineCommand('tcQueueSetSnapshot', { numberOfKeys: 3, lua: SET_SNAPSHOT });
  redis.defineCommand('tcQueuePoll', { numberOfKeys: 3, lua: POLL });
  redis.defineCommand('tcQueueDelete', { numberOfKeys: 3, lua: DELETE });
  redis.defineCommand('tcQueueIndexed', { numberOfKeys: 2, lua: INDEXED });
}

/** An index that lists a queue which is gone. */
export interface StaleIndexEntry {
  queueId: string;
  userId?: number;
  realmId?: number;
}

/** What one intake entry adds to one queue. */
export interface AppendGroup {
  entryId: string;
  xid: string | undefined;
  events: string[];
}

/** One queue's share of a fan-out batch: its entries' events, in stream order (one script run). */
export interface Append {
  queueId: string;
  groups: AppendGroup[];
}

export interface AppendOutcome {
  status: AppendResult;
  /** Events the queue took (0 unless appended). */
  appended: number;
}

export class QueueStore {
  private readonly redis: Scripted;

  constructor(
    redis: Redis,
    readonly prefix: string,
    private readonly options: {
      maxEvents: number;
      parkAllowanceMs: number;
      /** How much longer than its longest-lived queue an index is kept (absorbs clock and timing slack). */
      indexMarginMs: number;
      /** REDIS_WAIT_REPLICAS: a queue's creation, index entries and appends count once replicas hold them. */
      durability?: Durability;
    },
  ) {
    defineQueueCommands(redis);
    this.redis = redis as Scripted;
  }

  keys(queueId: string): [string, string, string] {
    const tag = `${this.prefix}{q:${queueId}}`;
    return [`${tag}:m`, `${tag}:e`, `${tag}:x`];
  }

  /** The queue's shard channel (SPUBLISH/SSUBSCRIBE): in the queue's slot, so its scripts may publish to it. */
  wakeChannel(queueId: string): string {
    return `${this.prefix}{q:${queueId}}:wake`;
  }

  /** The queue id a wake channel belongs to. */
  queueIdOfChannel(channel: string): string {
    return channel.slice(`${this.prefix}{q:`.length, -'}:wake'.length);
  }

  /** `'*'`: the pattern of every user index. */
  userIndex(userId: number | '*'): string {
    return `${this.prefix}events:user:${userId}`;
  }

  realmWideIndex(realmId: number | '*'): string {
    return `${this.prefix}events:realm-wide:${realmId}`;
  }

  /**
   * Creates the queue and lists it in its indexes, both before returning: register reads its
   * state only afterwards, so no event committed after that read can miss the queue.
   */
  async create(
    queueId: string,
    descriptor: QueueDescriptor,
    options: { realmWide: boolean; pendingSnapshot: boolean },
  ): Promise<void> {
    const lifespanMs = descriptor.lifespanSecs * 1000;
    const ttlMs = lifespanMs + this.options.parkAllowanceMs;
    const indexTtlMs = INDEX_TTL_FACTOR * ttlMs + this.options.indexMarginMs;
    const pipeline = crossSlotPipeline(this.redis, this.options.durability) as ScriptedPipeline;
    const { userId, realmId } = descriptor;
    // The queue exists before an index lists it: fan-out takes a listed queue it cannot find for
    // a stale entry and removes it from the index. One server runs the pipeline in order; a
    // Cluster runs each node's share at once (the index may live on another node), so there the
    // queue is created first. (A cluster checker run lost 69 events of a queue so removed.)
    const indexes = isCluster(this.redis)
      ? (crossSlotPipeline(this.redis, this.options.durability) as ScriptedPipeline)
      : pipeline;
    pipeline.tcQueueCreate(
      this.keys(queueId)[0],
      userId,
      realmId,
      JSON.stringify(descriptor),
      lifespanMs,
      options.pendingSnapshot ? '1' : '0',
      options.realmWide ? '1' : '0',
      indexTtlMs,
      ttlMs,
    );
    if (indexes !== pipeline) throwPipelineErrors(await pipeline.exec());
    this.listInIndexes(indexes, queueId, { userId, realmId, realmWide: options.realmWide }, indexTtlMs);
    throwPipelineErrors(await indexes.exec());
  }

  /** Lists the queue in its indexes and makes them live at least `ttlMs` more. */
  private listInIndexes(
    pipeline: ScriptedPipeline,
    queueId: string,
    owner: { userId: number; realmId: number; realmWide: boolean },
    ttlMs: number,
  ): void {
    const indexes = [this.userIndex(owner.userId)];
    if (owner.realmWide) indexes.push(this.realmWideIndex(owner.realmId));
    for (const index of indexes) {
      pipeline.sadd(index, queueId);
      // Only ever extended: the index serves every queue of its user (or realm).
      pipeline.pexpire(index, ttlMs, 'GT');
      pipeline.pexpire(index, ttlMs, 'NX');
    }
  }

  /**
   * Extends the indexes of a queue a poll just kept alive, up to `until` (Redis time, ms), then
   * records that in the queue (field i): a failure here fails the poll, and the next poll retries.
   */
  private async refreshIndexes(queueId: string, userId: number, refresh: string): Promise<void> {
    const [until, indexTtlMs, realmWide, realmId, queueTtlMs] = refresh.split(':').map(Number);
    const pipeline = crossSlotPipeline(this.redis, this.options.durability) as ScriptedPipeline;
    // The expiry is measured from when it runs, after the script that computed `until`.
    this.listInIndexes(pipeline, queueId, { userId, realmId, realmWide: realmWide === 1 }, indexTtlMs);
    // The queue is extended only once the indexes are: one server runs a pipeline in order, a
    // Cluster runs each node's share at once. With replicas to wait for, only once the indexes'
    // replicas hold it: a failover must not leave the queue believing in an index time that was lost.
    const separate = this.options.durability?.replicas || isCluster(this.redis);
    if (separate) throwPipelineErrors(await pipeline.exec());
    const marker = separate ? (crossSlotPipeline(this.redis) as ScriptedPipeline) : pipeline;
    const [meta, events] = this.keys(queueId);
    marker.tcQueueIndexed(meta, events, until, queueTtlMs);
    throwPipelineErrors(await marker.exec());
  }

  /** Records register's snapshot; returns how many already-queued events it made redundant. */
  async setSnapshot(queueId: string, snapshot: Snapshot): Promise<number> {
    return this.redis.tcQueueSetSnapshot(
      ...this.keys(queueId),
      snapshot.xmin,
      snapshot.xmax,
      `,${snapshot.xip.join(',')},`,
    );
  }

  async descriptors(queueIds: string[]): Promise<(QueueDescriptor | null)[]> {
    if (queueIds.length === 0) return [];
    const pipeline = crossSlotPipeline(this.redis);
    for (const queueId of queueIds) pipeline.hget(this.keys(queueId)[0], 'd');
    const results = throwPipelineErrors(await pipeline.exec());
    return results.map((raw) => (typeof raw === 'string' ? (JSON.parse(raw) as QueueDescriptor) : null));
  }

  async queuesOfUsers(userIds: number[]): Promise<Map<number, string[]>> {
    const pipeline = crossSlotPipeline(this.redis);
    for (const userId of userIds) pipeline.smembers(this.userIndex(userId));
    const results = throwPipelineErrors(await pipeline.exec()) as string[][];
    return new Map(userIds.map((userId, i) => [userId, results[i]]));
  }

  async realmWideQueues(realmIds: number[]): Promise<Map<number, string[]>> {
    const pipeline = crossSlotPipeline(this.redis);
    for (const realmId of realmIds) pipeline.smembers(this.realmWideIndex(realmId));
    const results = throwPipelineErrors(await pipeline.exec()) as string[][];
    return new Map(realmIds.map((realmId, i) => [realmId, results[i]]));
  }

  /** Applies a fan-out batch (one pipeline per chunk, one script per queue); outcomes in the same order. */
  async append(appends: Append[], fence?: Fence, chunkSize = 2000): Promise<AppendOutcome[]> {
    const out: AppendOutcome[] = [];
    const fenceArgs = fence ? [`g${fence.partition}`, fence.generation] : ['', 0];
    for (let start = 0; start < appends.length; start += chunkSize) {
      const pipeline = crossSlotPipeline(this.redis, this.options.durability) as ScriptedPipeline;
      for (const append of appends.slice(start, start + chunkSize)) {
        const args: (string | number)[] = [this.options.maxEvents, this.wakeChannel(append.queueId), ...fenceArgs];
        for (const group of append.groups)
          args.push(group.entryId, group.xid ?? '', group.events.length, ...group.events);
        pipeline.tcQueueAppend(...this.keys(append.queueId), ...args);
      }
      for (const result of throwPipelineErrors(await pipeline.exec()) as number[]) {
        const status: AppendResult =
          result > 0
            ? 'appended'
            : result === 0
              ? 'skipped'
              : result === -1
                ? 'gone'
                : result === -2
                  ? 'dropped'
                  : 'fenced';
        out.push({ status, appended: Math.max(0, result) });
      }
    }
    return out;
  }

  async poll(queueId: string, mode: PollMode, userId: number, lastEventIdOrSeq: number): Promise<PollResult> {
    const lifespanAllowance = this.options.parkAllowanceMs;
    const reply = await this.redis.tcQueuePoll(
      ...this.keys(queueId),
      mode,
      userId,
      lastEventIdOrSeq,
      lifespanAllowance,
      this.wakeChannel(queueId),
      this.options.indexMarginMs,
    );
    const status = reply[0] as string;
    if (status === 'ok') {
      const refresh = reply[3];
      if (typeof refresh === 'string' && refresh !== '') await this.refreshIndexes(queueId, userId, refresh);
      return { status, events: reply[1] as string, seq: Number(reply[2]) };
    }
    if (status === 'heartbeat') return { status, heartbeatId: Number(reply[1]), seq: Number(reply[2]) };
    return { status: status as 'bad' | 'pruned' | 'superseded' };
  }

  /** Deletes a queue of `userId`: 'deleted', 'missing' (none in `realmId`) or 'forbidden' (another user's). */
  async delete(queueId: string, userId: number, realmId: number): Promise<'deleted' | 'missing' | 'forbidden'> {
    const result = await this.redis.tcQueueDelete(...this.keys(queueId), userId, this.wakeChannel(queueId), realmId);
    return result === 1 ? 'deleted' : result === 0 ? 'missing' : 'forbidden';
  }

  /**
   * Deletes the user's live queues beyond the newest `limit` (EVENTS_MAX_QUEUES_PER_USER): the
   * least recently polled first, queues with a parked poll last, `keep` (the one just created)
   * never. A parked poll on a deleted queue is answered BAD_EVENT_QUEUE_ID. Returns the ids deleted.
   */
  async collectBeyondLimit(userId: number, realmId: number, limit: number, keep: string): Promise<string[]> {
    const queueIds = await this.redis.smembers(this.userIndex(userId));
    if (queueIds.length <= limit) return [];
    const pipeline = crossSlotPipeline(this.redis);
    for (const queueId of queueIds) {
      const meta = this.keys(queueId)[0];
      pipeline.hmget(meta, 'l', 'k', 'kt');
      pipeline.pexpiretime(meta);
    }
    const results = throwPipelineErrors(await pipeline.exec());
    // A parked poll is answered (a heartbeat at the latest) within the park allowance; a mark
    // older than that belongs to a poll whose client or replica went away without answering it.
    // Taken for parked, such queues (a bench's earlier phase, a crashed replica's clients) were
    // kept while the queues just registered were collected (test/abandoned-parks.test.ts).
    const [seconds, micros] = await this.redis.time();
    const parkedSince = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - this.options.parkAllowanceMs;
    const live = queueIds
      .map((queueId, i) => {
        const [lifespanMs, parkedSeq, parkedAt] = results[2 * i] as (string | null)[];
        // Marks written before parking times were (no kt) count as parked, as they did then.
        const parked = parkedSeq !== null && (parkedAt === null || Number(parkedAt) >= parkedSince);
        // Every poll sets the time to live to the lifespan plus the same allowance: the expiry
        // time less the lifespan orders queues by their last poll. An absolute time, not PTTL:
        // in a Cluster each node answers at its own moment, and a busy one would look older.
        return { queueId, parked, recency: (results[2 * i + 1] as number) - Number(lifespanMs) };
      })
      .filter((_, i) => (results[2 * i] as (string | null)[])[0] !== null);
    const gone = queueIds.filter((queueId) => !live.some((queue) => queue.queueId === queueId));
    if (live.length <= limit) {
      await this.forget(gone.map((queueId) => ({ queueId, userId })));
      return [];
    }
    const victims = live
      .filter((queue) => queue.queueId !== keep)
      .sort((a, b) => Number(a.parked) - Number(b.parked) || a.recency - b.recency)
      .slice(0, live.length - limit)
      .map((queue) => queue.queueId);
    for (const queueId of victims) await this.delete(queueId, userId, realmId);
    await this.forget([...gone, ...victims].map((queueId) => ({ queueId, userId })));
    return victims;
  }

  /**
   * Deletes every queue and queue index of this prefix, waking the polls parked on those queues
   * (their next poll answers BAD_EVENT_QUEUE_ID). For a Redis that lost writes: see rollback-watch.ts.
   * Returns how many queues there were.
   *
   * The indexes go first, on every node, then the queues. Clients re-register while this runs
   * (a dropped queue answers at once), and a queue is created before it is listed: dropping
   * the queues first could delete the index of a queue registered meanwhile and keep the queue,
   * which would then answer polls but never receive an event. This way a queue registered
   * meanwhile either survives listed or is dropped (its stale index entry is removed by the
   * fan-out) and its client re-registers.
   */
  async dropAll(): Promise<number> {
    let dropped = 0;
    const metaKey = /\{q:([^}]+)\}:m$/;
    // SCAN sees one node's keys: in a Cluster every master is scanned, and each key (and the
    // queue's wake channel, in the same slot) is dropped on the node that holds it.
    for (const pattern of [this.userIndex('*'), this.realmWideIndex('*'), `${this.prefix}{q:*`])
      await forEachMaster(this.redis, async (node) => {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          if (keys.length === 0) continue;
          const pipeline = node.pipeline();
          for (const key of keys) {
            pipeline.unlink(key);
            const queueId = metaKey.exec(key)?.[1];
            if (queueId === undefined) continue;
            dropped++;
            // The message tcQueueDelete sends: the parked poll looks at its queue again.
            pipeline.spublish(this.wakeChannel(queueId), 'x');
          }
          await pipeline.exec();
        } while (cursor !== '0');
      });
    return dropped;
  }

  /** Removes queues that are gone from the indexes that still list them. */
  async forget(entries: StaleIndexEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = crossSlotPipeline(this.redis);
    for (const { queueId, userId, realmId } of entries) {
      if (userId !== undefined) pipeline.srem(this.userIndex(userId), queueId);
      if (realmId !== undefined) pipeline.srem(this.realmWideIndex(realmId), queueId);
    }
    await pipeline.exec();
  }
}

export function throwPipelineErrors(results: [Error | null, unknown][] | null): unknown[] {
  if (!results) throw new Error('Redis pipeline was discarded');
  return results.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}
