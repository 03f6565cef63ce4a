// Event-queue helpers for API tests: register a queue through the gateway, collect what it
// receives (every answer is checked against zulip.yaml by the client), and wait until the
// event tier has fanned out everything published so far, so a test can assert that an event
// did NOT arrive without waiting for a timeout.

import type { ApiClient, Params } from './client';
import type { BaseDeps } from '@teamchat/runtime';
import { checkDeclaredEvent } from './event-check';
import { sleep } from './wait';

export type ReceivedEvent = { id: number; type: string } & Record<string, any>;

/** The consumer group of the event tier on the intake streams. */
const INTAKE_GROUP = 'events';

export class EventQueue {
  private buffered: ReceivedEvent[] = [];

  constructor(
    readonly client: ApiClient,
    readonly queueId: string,
    /** The id to acknowledge with the next poll. */
    public lastEventId: number,
    /** The register response (initial state included). */
    readonly registration: Record<string, any>,
  ) {}

  /** POST /register with `params` (JSON-encoded like a real client would); throws unless it succeeds. */
  static async register(client: ApiClient, params: Params = {}): Promise<EventQueue> {
    const response = await client.post('/api/v1/register', params);
    if (response.status !== 200)
      throw new Error(`register failed: ${response.status} ${JSON.stringify(response.body)}`);
    return new EventQueue(client, response.body.queue_id, response.body.last_event_id, response.body);
  }

  /** One GET /events; acknowledges what earlier polls returned. Heartbeats are returned too. */
  async poll(options: { dontBlock?: boolean } = {}): Promise<ReceivedEvent[]> {
    const response = await this.client.get('/api/v1/events', {
      queue_id: this.queueId,
      last_event_id: this.lastEventId,
      dont_block: options.dontBlock ?? false,
    });
    if (response.status !== 200)
      throw new Error(`GET /events failed: ${response.status} ${JSON.stringify(response.body)}`);
    const events = response.body.events as ReceivedEvent[];
    for (const event of events) checkDeclaredEvent(event, 'polled');
    for (const event of events) this.lastEventId = Math.max(this.lastEventId, event.id);
    return events;
  }

  /** Long-polls until `count` events (heartbeats aside) arrived, or throws after `timeoutMs`. */
  async next(count = 1, timeoutMs = 15_000): Promise<ReceivedEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.buffered.length < count) {
      if (Date.now() > deadline) {
        throw new Error(`expected ${count} events, got ${this.buffered.length}: ${JSON.stringify(this.buffered)}`);
      }
      const events = await this.poll();
      this.buffered.push(...events.filter((event) => event.type !== 'heartbeat'));
    }
    return this.buffered.splice(0, count);
  }

  /** Everything queued right now (a non-blocking poll), heartbeats aside. */
  async drain(): Promise<ReceivedEvent[]> {
    const events = [
      ...this.buffered,
      ...(await this.poll({ dontBlock: true })).filter((event) => event.type !== 'heartbeat'),
    ];
    this.buffered = [];
    return events;
  }

  async delete(): Promise<void> {
    const response = await this.client.delete('/api/v1/events', { queue_id: this.queueId });
    if (response.status !== 200)
      throw new Error(`DELETE /events failed: ${response.status} ${JSON.stringify(response.body)}`);
  }
}

export const registerEventQueue = (client: ApiClient, params: Params = {}) => EventQueue.register(client, params);

/**
 * Resolves once the event tier has fanned out every event published so far (each intake
 * partition read up to its newest entry, nothing pending). Then a non-blocking poll shows
 * exactly what a queue got.
 */
export async function settleEvents(
  stack: { deps: Pick<BaseDeps, 'redis' | 'bus'> },
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const { redis, bus } = stack.deps;
  for (;;) {
    let settled = true;
    for (let partition = 0; partition < bus.partitions && settled; partition++) {
      const stream = bus.keys.intakeStream(partition);
      if ((await redis.exists(stream)) === 0) continue;
      const info = pairs((await redis.xinfo('STREAM', stream)) as unknown[]);
      if (Number(info.length) === 0 && info['last-generated-id'] === '0-0') continue;
      const group = ((await redis.xinfo('GROUPS', stream)) as unknown[][])
        .map(pairs)
        .find((g) => g.name === INTAKE_GROUP);
      settled = !!group && group['last-delivered-id'] === info['last-generated-id'] && Number(group.pending) === 0;
    }
    if (settled) return;
    if (Date.now() > deadline) throw new Error('the event tier did not fan out the published events in time');
    await sleep(20);
  }
}

function pairs(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}
