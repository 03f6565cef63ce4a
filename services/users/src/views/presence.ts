import { JsonableError, optional, param, required, type AuthedContext } from '@teamchat/core';
import { realmPresence } from '@teamchat/domain';
import { doUpdatePresence } from '../actions/presence';
import type { UsersDeps } from '../deps';
import { requireHuman } from '../lib/access';
import { readPresenceActor } from '../lib/presence';

/**
 * POST /users/me/presence: records the ping and answers with the realm's presence (Zulip's
 * update_active_status_backend): the modern {user_id: {active_timestamp, idle_timestamp}}
 * form when slim_presence or last_update_id is given, the legacy per-email form otherwise.
 */
export async function updatePresence({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const input = params.parse({
    status: required(param.string()),
    ping_only: optional(param.bool(), false),
    new_user_input: optional(param.bool(), false),
    slim_presence: optional(param.bool(), false),
    last_update_id: optional(param.int()),
    history_limit_days: optional(param.int({ min: 0 })),
  });
  if (input.status !== 'active' && input.status !== 'idle') throw new JsonableError(`Invalid status: ${input.status}`);
  const actor = await readPresenceActor(deps.db, requester.userId);
  requireHuman(actor);
  const now = new Date();
  await doUpdatePresence(deps, actor, input.status, now);
  if (input.ping_only) return {};

  return realmPresence(deps.db, actor, {
    slim: input.slim_presence || input.last_update_id !== undefined,
    lastUpdateId: input.last_update_id,
    historyDays: input.history_limit_days,
    now,
  });
}
