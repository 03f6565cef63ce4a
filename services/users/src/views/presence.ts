import { JsonableError, optional, param, required, type AuthedContext } from '@teamchat/core';
import { legacyPresence, loadActor, presenceAnswer, realmPresence } from '@teamchat/domain';
import { doUpdatePresence } from '../actions/presence';
import type { UsersDeps } from '../deps';
import { accessUserByIdOrEmail, requireHuman } from '../lib/access';
import { readPresenceActor } from '../lib/presence';

/**
 * POST /users/me/presence: records the ping and answers with the realm's presence (Zulip's
 * update_active_status_backend), from this process's copy of it (lib/presence-cache.ts): the
 * modern {user_id: {active_timestamp, idle_timestamp}} form when slim_presence or
 * last_update_id is given, the legacy per-email form otherwise.
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

  return presenceAnswer(deps.db, actor, await deps.presence.rows(actor.realm_id), {
    slim: input.slim_presence || input.last_update_id !== undefined,
    lastUpdateId: input.last_update_id,
    historyDays: input.history_limit_days,
    now,
  });
}

/**
 * GET /realm/presence (Zulip's get_statuses_for_user): everyone's presence the caller may see,
 * in the legacy per-email form.
 */
export async function getRealmPresence({ deps, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const { presences, server_timestamp } = await realmPresence(deps.db, actor, { slim: false });
  return { presences, server_timestamp };
}

/**
 * GET /users/{user_id_or_email}/presence (Zulip's get_presence_backend): one user's presence,
 * under "website" and "aggregated" alike (the server keeps no per-client presence).
 */
export async function getUserPresence({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const actor = await loadActor(deps.db, requester.userId);
  const key = String(req.params.user_id_or_email);
  const target = await accessUserByIdOrEmail(deps.db, actor, key, {
    allowDeactivated: true,
    allowBots: true,
    forAdmin: false,
  });
  if (target.is_bot) throw new JsonableError('Presence is not supported for bot users.');
  const stored = await deps.db.userPresence.findUnique({ where: { user_profile_id: target.id } });
  if (!stored?.last_connected_time) throw new JsonableError(`No presence data for ${key}`);
  const presence = legacyPresence(
    stored.last_active_time?.getTime() ?? null,
    stored.last_connected_time.getTime(),
    new Date(),
  );
  return { presence: { website: presence, aggregated: presence } };
}
