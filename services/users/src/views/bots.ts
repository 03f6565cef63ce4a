// The bot endpoints (Zulip's add_bot_backend, get_bots_backend, patch_bot_backend,
// regenerate_bot_api_key, deactivate_bot_backend in zerver/views/users.py). Bots' keys can be
// shown again to those who administer them: they are kept sealed (docs/adr/0007).

import type { Request, Response } from 'express';
import {
  BODY_LIMITS,
  InvalidArgumentError,
  JsonableError,
  optional,
  OrganizationAdministratorRequiredError,
  OrganizationOwnerRequiredError,
  param,
  pathInt,
  RequestParams,
  required,
  v,
  type AuthedContext,
} from '@teamchat/core';
import type { UserProfile } from '@teamchat/db';
import {
  avatarUrl,
  botDicts,
  BotType,
  checkFullName,
  isAdministrator,
  isOwner,
  loadActor,
  placeholderEmailDomain,
  Role,
  ROLE_VALUES,
} from '@teamchat/domain';
import { receiveUploadedFiles, type UploadedFiles } from '@teamchat/images';
import { canCreateUsers } from '../actions/admin-users';
import { MAX_AVATAR_FILE_SIZE_BYTES, setUploadedAvatar } from '../actions/avatars';
import { doCreateBot, doDeactivateBot, doUpdateBot, type BotUpdate } from '../actions/bots';
import { doRegenerateApiKey, doUpdateUser } from '../actions/users';
import type { UsersDeps } from '../deps';
import { canAdministerUser, requireMemberOrAdmin } from '../lib/access';
import { accessStreamByName, checkBotNameAvailable, checkCanCreateBot, SERVICE_INTERFACES } from '../lib/bots';

/** Django's EmailValidator for the part before the @: a dot-atom. */
const EMAIL_LOCAL_PART = /^[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+(\.[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+)*$/;

/** Zulip's check_url (Django's URLValidator, roughly): an absolute http(s) or ftp(s) URL with a host. */
const url = v.refine(v.str(), (value, varName) => {
  let parsed: URL | null = null;
  try {
    parsed = new URL(value);
  } catch {
    // Not a URL at all.
  }
  if (!parsed || !['http:', 'https:', 'ftp:', 'ftps:'].includes(parsed.protocol) || parsed.hostname === '')
    throw new InvalidArgumentError(`${varName} is not a URL`);
});

/**
 * The form of POST /bots and PATCH /bots/{bot_id}, whose routes read their own bodies: a
 * multipart one may carry the bot's avatar (its files, whatever their fields' names), the others
 * are urlencoded or JSON as everywhere.
 */
async function readBotForm(req: Request, res: Response): Promise<{ params: RequestParams; upload: UploadedFiles }> {
  const upload = await receiveUploadedFiles(req, res, MAX_AVATAR_FILE_SIZE_BYTES);
  if (!req.is('multipart')) req.body = await readFormBody(req);
  return { params: RequestParams.fromRequest(req), upload };
}

async function readFormBody(req: Request): Promise<Record<string, unknown>> {
  if (Number(req.headers['content-length']) > BODY_LIMITS.default)
    throw new JsonableError('Request body too large', { status: 413 });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMITS.default) throw new JsonableError('Request body too large', { status: 413 });
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  if (req.is('application/json')) {
    try {
      const parsed: unknown = JSON.parse(text);
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
    } catch {
      throw new JsonableError('Malformed JSON', { code: 'INVALID_JSON' });
    }
  }
  // urlencoded (and, as Django, a body of no declared type): the last of a repeated field counts.
  return Object.fromEntries(new URLSearchParams(text));
}

/** Zulip's add_bot_backend and patch_bot_backend: no file, or exactly one. */
function avatarFile(upload: UploadedFiles) {
  if (upload.tooMany || upload.files.length > 1) throw new JsonableError('You may only upload one file at a time');
  return upload.files[0];
}

/** Zulip's access_bot_by_id: a bot of the realm the actor may administer (its owner, or an administrator). */
async function accessBotById(deps: UsersDeps, actor: UserProfile, botId: number): Promise<UserProfile> {
  const target = await deps.db.userProfile.findFirst({ where: { id: botId, realm_id: actor.realm_id } });
  if (!target || !target.is_bot) throw new JsonableError('No such bot');
  if (!canAdministerUser(actor, target)) throw new JsonableError('Insufficient permission');
  // A bot that may create users is an owner's responsibility.
  if (canCreateUsers(target) && !isOwner(actor.role)) throw new OrganizationOwnerRequiredError();
  return target;
}

/** POST /bots: answers the new bot's id and key (Zulip's add_bot_backend). */
export async function createBot({ deps, requester, req, res }: AuthedContext<UsersDeps>) {
  const { user: actor, realm } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  const { params, upload } = await readBotForm(req, res);
  const input = params.parse({
    full_name: required(param.string()),
    short_name: required(param.string()),
    bot_type: optional(param.int(), BotType.DEFAULT),
    payload_url: optional(param.json(url), ''),
    service_name: optional(param.string()),
    config_data: optional(param.json(v.dict(v.str()))),
    interface_type: optional(param.int(), 1),
    default_sending_stream: optional(param.string()),
    default_events_register_stream: optional(param.string()),
    default_all_public_streams: optional(param.bool()),
  });
  const shortName = input.short_name.trim();
  if (shortName === '') throw new JsonableError('Bad name or username');
  const serviceName =
    input.bot_type !== BotType.INCOMING_WEBHOOK ? input.service_name || shortName : input.service_name;
  const fullName = checkFullName(input.full_name);
  const localPart = `${shortName}-bot`;
  if (!EMAIL_LOCAL_PART.test(localPart)) throw new JsonableError('Bad name or username');
  const email = `${localPart}@${placeholderEmailDomain(realm)}`;
  if (input.bot_type === BotType.EMBEDDED) throw new JsonableError('Embedded bots are not enabled.');
  const taken = await deps.db.userProfile.findFirst({
    where: { realm_id: realm.id, delivery_email: email.toLowerCase() },
    select: { id: true },
  });
  if (taken) throw new JsonableError('Email is already in use.');
  await checkBotNameAvailable(deps.db, realm.id, fullName, { isActivation: false });
  await checkCanCreateBot(deps.db, actor, input.bot_type);
  if (!SERVICE_INTERFACES.includes(input.interface_type)) throw new JsonableError('Invalid interface type');
  const avatar = avatarFile(upload);
  const sendingStream =
    input.default_sending_stream !== undefined
      ? await accessStreamByName(deps.db, actor, input.default_sending_stream)
      : null;
  const registerStream =
    input.default_events_register_stream !== undefined
      ? await accessStreamByName(deps.db, actor, input.default_events_register_stream)
      : null;
  // Incoming webhooks named after an integration are checked against Zulip's integrations,
  // none of which this server has.
  if (input.bot_type === BotType.INCOMING_WEBHOOK && serviceName)
    throw new JsonableError(`Invalid integration '${serviceName}'.`);

  const created = await doCreateBot(deps, realm, actor, {
    email,
    fullName,
    botType: input.bot_type,
    payloadUrl: input.payload_url,
    interfaceType: input.interface_type,
    serviceName: serviceName ?? shortName,
    defaultSendingStreamId: sendingStream?.id ?? null,
    defaultEventsRegisterStreamId: registerStream?.id ?? null,
    defaultAllPublicStreams: input.default_all_public_streams ?? false,
  });
  // Made, then given its avatar, as Zulip (upload_avatar_image after do_create_user).
  const bot = avatar ? await setUploadedAvatar(deps, created.bot, avatar) : created.bot;
  return {
    user_id: bot.id,
    api_key: created.apiKey,
    avatar_url: avatarUrl(bot),
    default_sending_stream: sendingStream?.name ?? null,
    default_events_register_stream: registerStream?.name ?? null,
    default_all_public_streams: bot.default_all_public_streams,
  };
}

/** GET /bots: the requester's active bots, oldest first, with their keys (Zulip's get_bots_backend). */
export async function getBots({ deps, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  const bots = await botDicts(
    deps.db,
    { realm_id: actor.realm_id, bot_owner_id: actor.id, is_active: true },
    deps.env.INTERNAL_JWT_SECRET,
  );
  return {
    bots: bots.map((bot) => ({
      username: bot.email,
      full_name: bot.full_name,
      api_key: bot.api_key,
      avatar_url: bot.avatar_url,
      default_sending_stream: bot.default_sending_stream,
      default_events_register_stream: bot.default_events_register_stream,
      default_all_public_streams: bot.default_all_public_streams,
    })),
  };
}

/** PATCH /bots/{bot_id} (Zulip's patch_bot_backend): its owner or an administrator changes it. */
export async function updateBot({ deps, requester, req, res }: AuthedContext<UsersDeps>) {
  const botId = pathInt(req, 'bot_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  const { params, upload } = await readBotForm(req, res);
  const input = params.parse({
    full_name: optional(param.string()),
    role: optional(
      param.json(
        v.refine(v.int(), (value) => {
          if (!ROLE_VALUES.includes(value)) throw new InvalidArgumentError('Invalid role');
        }),
      ),
    ),
    bot_owner_id: optional(param.int()),
    config_data: optional(param.json(v.dict(v.str()))),
    service_payload_url: optional(param.json(url)),
    service_interface: optional(param.int(), 1),
    default_sending_stream: optional(param.string()),
    default_events_register_stream: optional(param.string()),
    default_all_public_streams: optional(param.bool()),
  });
  const bot = await accessBotById(deps, actor, botId);
  const update: BotUpdate = {};
  if (input.full_name !== undefined) {
    const fullName = checkFullName(input.full_name);
    // The web app sends the name even when unchanged: no change, no check.
    if (fullName !== bot.full_name) {
      await checkBotNameAvailable(deps.db, bot.realm_id, fullName, { isActivation: false });
      update.fullName = fullName;
    }
  }
  if (input.role !== undefined && input.role !== bot.role) {
    if ((input.role === Role.OWNER || bot.role === Role.OWNER) && !isOwner(actor.role))
      throw new OrganizationOwnerRequiredError();
    if (!isAdministrator(actor.role)) throw new OrganizationAdministratorRequiredError();
  }
  if (input.bot_owner_id !== undefined && input.bot_owner_id !== bot.bot_owner_id) {
    const owner = await deps.db.userProfile.findFirst({ where: { id: input.bot_owner_id, realm_id: actor.realm_id } });
    if (!owner) throw new JsonableError('Failed to change owner, no such user');
    if (!owner.is_active) throw new JsonableError('Failed to change owner, user is deactivated');
    if (owner.is_bot) throw new JsonableError("Failed to change owner, bots can't own other bots");
    update.owner = owner;
  }
  if (input.default_sending_stream !== undefined) {
    update.defaultSendingStreamId =
      input.default_sending_stream === ''
        ? null
        : (await accessStreamByName(deps.db, actor, input.default_sending_stream)).id;
  }
  if (input.default_events_register_stream !== undefined) {
    update.defaultEventsRegisterStreamId =
      input.default_events_register_stream === ''
        ? null
        : (await accessStreamByName(deps.db, actor, input.default_events_register_stream)).id;
  }
  if (input.default_all_public_streams !== undefined) update.defaultAllPublicStreams = input.default_all_public_streams;
  if (input.service_payload_url !== undefined) {
    if (!SERVICE_INTERFACES.includes(input.service_interface)) throw new JsonableError('Invalid interface type');
    update.service = { payloadUrl: input.service_payload_url, interface: input.service_interface };
  }
  if (input.config_data !== undefined) update.configData = input.config_data;
  const avatar = avatarFile(upload);

  if (input.role !== undefined && input.role !== bot.role)
    await doUpdateUser(deps, actor, bot.id, { role: input.role });
  const updated = await doUpdateBot(deps, bot.id, update);
  if (avatar) await setUploadedAvatar(deps, bot, avatar);
  const [shown] = await botDicts(deps.db, { id: bot.id }, deps.env.INTERNAL_JWT_SECRET);
  const owner =
    updated.bot_owner_id === null
      ? null
      : await deps.db.userProfile.findUnique({ where: { id: updated.bot_owner_id }, select: { email: true } });
  return {
    full_name: shown.full_name,
    avatar_url: shown.avatar_url,
    service_interface: input.service_interface,
    service_payload_url: input.service_payload_url ?? null,
    config_data: input.config_data ?? null,
    default_sending_stream: shown.default_sending_stream,
    default_events_register_stream: shown.default_events_register_stream,
    default_all_public_streams: shown.default_all_public_streams,
    // Bots without an owner have no bot_owner.
    ...(owner ? { bot_owner: owner.email } : {}),
  };
}

/** POST /bots/{bot_id}/api_key/regenerate: the old key stops working; the new one is answered. */
export async function regenerateBotApiKey({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const botId = pathInt(req, 'bot_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireMemberOrAdmin(actor);
  const bot = await accessBotById(deps, actor, botId);
  return { api_key: await doRegenerateApiKey(deps, bot.id) };
}

/** DELETE /bots/{bot_id}: deactivates the bot (Zulip's deactivate_bot_backend). */
export async function deactivateBot({ deps, requester, req }: AuthedContext<UsersDeps>) {
  const botId = pathInt(req, 'bot_id');
  const { user: actor } = await loadActor(deps.db, requester.userId);
  const bot = await accessBotById(deps, actor, botId);
  await doDeactivateBot(deps, actor.realm_id, bot.id);
  return {};
}
