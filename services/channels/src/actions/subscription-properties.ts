// A user's own settings for a channel: colour, pin, mute, notifications
// (Zulip's update_subscription_properties_backend, do_change_subscription_property).

import { JsonableError } from '@teamchat/core';
import { transaction, type UserProfile } from '@teamchat/db';
import { accessStreamById, viewerOf } from '@teamchat/domain';
import type { ChannelsDeps } from '../deps';

export const BOOLEAN_SUBSCRIPTION_PROPERTIES = [
  'in_home_view',
  'is_muted',
  'desktop_notifications',
  'audible_notifications',
  'push_notifications',
  'email_notifications',
  'pin_to_top',
  'wildcard_mentions_notify',
] as const;

export interface SubscriptionPropertyChange {
  stream_id: number;
  property: string;
  value: boolean | string;
}

/** Zulip's check_color. */
export function checkColor(varName: string, value: string): string {
  if (!/^#[0-9a-fA-F]{6}$/.test(value)) throw new JsonableError(`${varName} is not a valid hex color code`);
  return value;
}

/** Checks every change first, then applies them all in one transaction. */
export async function doChangeSubscriptionProperties(
  deps: ChannelsDeps,
  user: UserProfile,
  changes: SubscriptionPropertyChange[],
): Promise<void> {
  const checked: {
    subscriptionId: number;
    streamId: number;
    column: string;
    value: boolean | string;
    property: string;
  }[] = [];
  for (const change of changes) {
    let column: string;
    let value: boolean | string;
    if (change.property === 'color') {
      if (typeof change.value !== 'string') throw new JsonableError('color is not a string');
      value = checkColor('color', change.value);
      column = 'color';
    } else if ((BOOLEAN_SUBSCRIPTION_PROPERTIES as readonly string[]).includes(change.property)) {
      if (typeof change.value !== 'boolean') throw new JsonableError(`${change.property} is not a boolean`);
      // in_home_view is the deprecated inverse of is_muted.
      column = change.property === 'in_home_view' ? 'is_muted' : change.property;
      value = change.property === 'in_home_view' ? !change.value : change.value;
    } else {
      throw new JsonableError(`Unknown subscription property: ${change.property}`);
    }
    const { stream } = await accessStreamById(deps.db, viewerOf(user), change.stream_id, {
      requireActiveChannel: true,
    });
    const sub = await deps.db.subscription.findUnique({
      where: { user_profile_id_stream_id: { user_profile_id: user.id, stream_id: stream.id } },
    });
    if (!sub?.active) throw new JsonableError(`Not subscribed to channel ID ${change.stream_id}`);
    checked.push({ subscriptionId: sub.id, streamId: stream.id, column, value, property: change.property });
  }

  await transaction(deps.db, async (tx) => {
    for (const change of checked) {
      await tx.db.subscription.update({
        where: { id: change.subscriptionId },
        data: { [change.column]: change.value },
      });
      if (change.column === 'is_muted') {
        await deps.bus.sendEventOnCommit(
          tx,
          user.realm_id,
          {
            type: 'subscription',
            op: 'update',
            property: 'in_home_view',
            value: !change.value,
            stream_id: change.streamId,
          },
          [user.id],
        );
      }
      await deps.bus.sendEventOnCommit(
        tx,
        user.realm_id,
        {
          type: 'subscription',
          op: 'update',
          property: change.column,
          value: change.value,
          stream_id: change.streamId,
        },
        [user.id],
      );
    }
  });
}
