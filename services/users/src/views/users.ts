import {
  InvalidArgumentError,
  JsonableError,
  optional,
  OrganizationAdministratorRequiredError,
  OrganizationOwnerRequiredError,
  param,
  pathInt,
  required,
  v,
  type AuthedContext,
} from '@teamchat/core';
import {
  apiUserDict,
  BotType,
  checkFullName,
  inaccessibleUserDict,
  inaccessibleUserIds,
  isAdministrator,
  isOwner,
  loadActor,
  isPasswordTooWeak,
  realmEmailValidator,
  realmUsersForApi,
  Role,
  ROLE_VALUES,
  type RealmEmailProblem,
} from '@teamchat/domain';
import { canCreateUsers, doCreateUserByAdmin } from '../actions/admin-users';
import { doDeactivateOwnUser, doDeactivateUser, doReactivateUser, doUpdateUser } from '../actions/users';
import type { UsersDeps } from '../deps';
import { accessUserById, accessUserByIdOrEmail, requireAdministrator } from '../lib/access';
import { checkBotNameAvailable, checkCanCreateBot } from '../lib/bots';
import { profileDataByUser } from '../lib/profile-data';
import { profileDataUpdates } from './profile-fields';

const readOptions = {
  client_gravatar: optional(param.bool(), true),
  include_custom_profile_fields: optional(param.bool(), false),
};

/** GET /users: every user of the realm; a restricted guest sees "Unknown user" for the others. */
export async function getUsers({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { client_gravatar, include_custom_profile_fields } = params.parse(readOptions);
  // A heavy read: the read replica serves it once it has replayed the organisation's last write.
  const { actor, realm, users, hidden, profiles } = await deps.reads.readFor(requester.realmId, async (db) => {
    const { user: actor, realm } = await loadActor(db, requester.userId);
    const users = await realmUsersForApi(db, actor.realm_id);
    const hidden = await inaccessibleUserIds(db, actor, users);
    const profiles = include_custom_profile_fields ? await profileDataByUser(db, { realmId: actor.realm_id }) : null;
    return { actor, realm, users, hidden, profiles };
  });
  return {
    members: users.map((user) =>
      hidden.has(user.id)
        ? inaccessibleUserDict(user.id, realm)
        : apiUserDict(user, actor, {
            clientGravatar: client_gravatar,
            profileData: profiles ? (profiles.get(user.id) ?? {}) : undefined,
          }),
    ),
  };
}

/** GET /users/{user_id} and GET /users/{email} (the placeholder address, or a real one the requester may see). */
export async function getUser({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const { client_gravatar, include_custom_profile_fields } = params.parse(readOptions);
  const actor = await loadActor(deps.db, requester.userId);
  const target = await accessUserByIdOrEmail(deps.db, actor, String(req.params.user), {
    allowDeactivated: true,
    allowBots: true,
    forAdmin: false,
  });
  const profile = include_custom_profile_fields
    ? ((await profileDataByUser(deps.db, { userIds: [target.id] })).get(target.id) ?? {})
    : undefined;
  return { user: apiUserDict(target, actor.user, { clientGravatar: client_gravatar, profileData: profile }) };
}

/**
 * PATCH /users/{user_id} and PATCH /users/{email}: an administrator changes a user's name, role
 * or profile data (Zulip's update_user_backend and update_user_by_email_api). Owners alone grant
 * or remove the owner role.
 */
export async function updateUser({ deps, params, requester, req }: AuthedContext<UsersDeps>) {
  const { full_name, role, profile_data } = params.parse({
    full_name: optional(param.string()),
    role: optional(
      param.json(
        v.refine(v.int(), (value) => {
          if (!ROLE_VALUES.includes(value)) throw new InvalidArgumentError('Invalid role');
        }),
      ),
    ),
    profile_data: optional(param.json(profileDataUpdates)),
  });
  const loaded = await loadActor(deps.db, requester.userId);
  const actor = loaded.user;
  const target = await accessUserByIdOrEmail(deps.db, loaded, String(req.params.user), {
    allowDeactivated: true,
    allowBots: true,
    forAdmin: true,
  });
  let newRole: number | undefined;
  if (role !== undefined && role !== target.role) {
    if ((role === Role.OWNER || target.role === Role.OWNER) && !isOwner(actor.role))
      throw new OrganizationOwnerRequiredError();
    if (!isAdministrator(actor.role)) throw new OrganizationAdministratorRequiredError();
    newRole = role;
  }
  let newName: string | undefined;
  if (full_name !== undefined && full_name !== target.full_name && full_name.trim() !== '')
    newName = checkFullName(full_name);
  await doUpdateUser(deps, actor, target.id, { role: newRole, fullName: newName, profileData: profile_data });
  return {};
}

/** Django's EmailField, roughly: what CreateUserForm accepts. */
const EMAIL_PATTERN = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/;

/** Zulip's create_user_backend wording. */
const ADMIN_CREATED_EMAIL_PROBLEMS: Record<RealmEmailProblem, (email: string) => string> = {
  outside_domains: (email) => `Email '${email}' not allowed in this organization`,
  contains_plus: () => 'Email addresses containing + are not allowed.',
};

/**
 * POST /users (Zulip's create_user_backend): administrators holding can_create_users make a
 * member account with a password; answers its id.
 */
export async function createUser({ deps, params, requester, log }: AuthedContext<UsersDeps>) {
  const { user: actor, realm } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const { email, password, full_name } = params.parse({
    email: required(param.string()),
    password: required(param.string()),
    full_name: required(param.string()),
  });
  if (!canCreateUsers(actor)) throw new JsonableError('User not authorized to create users');
  const fullName = checkFullName(full_name);
  if (!EMAIL_PATTERN.test(email) || email !== email.trim()) throw new JsonableError('Bad name or username');
  const problem = (await realmEmailValidator(deps.db, realm))(email);
  if (problem) throw new JsonableError(ADMIN_CREATED_EMAIL_PROBLEMS[problem](email));
  const taken = await deps.db.userProfile.findFirst({
    where: { realm_id: actor.realm_id, delivery_email: email.toLowerCase() },
    select: { id: true },
  });
  if (taken) throw new JsonableError(`Email '${email}' already in use`);
  if (isPasswordTooWeak(password)) throw new JsonableError('The password is too weak.');
  const { user } = await doCreateUserByAdmin(deps, { channelsUrl: deps.serviceUrls.channels, logger: log }, actor, {
    email,
    fullName,
    password,
  });
  return { user_id: user.id };
}

/** DELETE /users/me */
export async function deactivateOwnUser({ deps, requester }: AuthedContext<UsersDeps>) {
  await doDeactivateOwnUser(deps, requester.userId);
  return {};
}

/**
 * DELETE /users/{user_id}: an administrator deactivates a user (Zulip's deactivate_user_backend);
 * bots go through the bot endpoints. The user's own bots are deactivated with them.
 * deactivation_notification_comment asks for an email this server does not send: left unread,
 * it is reported in ignored_parameters_unsupported.
 */
export async function deactivateUser({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const targetId = pathInt(req, 'user');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const target = await accessUserById(deps.db, actor, targetId, { forAdmin: true });
  // doDeactivateUser refuses an owner to a non-owner, under the realm lock.
  await doDeactivateUser(deps, actor, target.id);
  return {};
}

/** POST /users/{user_id}/reactivate (Zulip's reactivate_user_backend): administrators, or a bot's owner. */
export async function reactivateUser({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const targetId = pathInt(req, 'user');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const target = await accessUserById(deps.db, actor, targetId, {
    allowDeactivated: true,
    allowBots: true,
    forAdmin: true,
  });
  if (target.is_bot) {
    // Reactivating a bot is making one again (Zulip's reactivate_user_backend).
    await checkCanCreateBot(deps.db, actor, target.bot_type ?? BotType.DEFAULT);
    await checkBotNameAvailable(deps.db, actor.realm_id, target.full_name, { isActivation: true });
  }
  await doReactivateUser(deps, actor, target.id);
  return {};
}
