// Subscription objects: the channel's API object merged with the user's own subscription properties.
import type { ZulipEventOf } from '@teamchat/bus';
import type { Stream, Subscription, TxClient } from '@teamchat/db';
import { streamApiDicts, subscriberFields, subscriptionProperties } from '@teamchat/domain';

type Reader = Parameters<typeof streamApiDicts>[0] & Pick<TxClient, '$queryRaw'>;

/** A subscription as the API shows it (and the subscription add event declares it). */
export type SubscriptionDict = ZulipEventOf<'subscription', 'add'>['subscriptions'][number];

export async function subscriptionDicts(
  db: Reader,
  subs: (Subscription & { stream: Stream })[],
  includeSubscribers: boolean | 'partial',
): Promise<SubscriptionDict[]> {
  // Once per channel: the subscriptions of many users (a bulk subscribe) share their channels.
  const streams = [...new Map(subs.map((sub) => [sub.stream_id, sub.stream])).values()];
  const [dicts, subscribers] = await Promise.all([
    streamApiDicts(db, streams),
    subscriberFields(
      db,
      streams.map((stream) => stream.id),
      includeSubscribers,
    ),
  ]);
  return subs.map((sub) => ({
    ...dicts.get(sub.stream_id)!,
    ...subscriptionProperties(sub),
    ...(subscribers.get(sub.stream_id) ?? {}),
  }));
}
