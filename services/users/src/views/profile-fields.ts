import { optional, param, required, v, type AuthedContext } from '@teamchat/core';
import { loadActor, profileFieldDict } from '@teamchat/domain';
import {
  doCreateProfileField,
  doReorderProfileFields,
  doUpdateOwnProfileData,
  type ProfileDataUpdate,
} from '../actions/profile-fields';
import type { UsersDeps } from '../deps';
import { requireAdministrator, requireHuman } from '../lib/access';

/** [{id, value}] where value is text, a list of user ids (person fields), or null to clear. */
export const profileDataUpdates: v.Validator<ProfileDataUpdate[]> = v.list(
  v.object({ id: v.id(), value: v.nullable(v.union(v.str({ allowNullBytes: false }), v.list(v.id()))) }),
);

/** GET /realm/profile_fields */
export async function listProfileFields({ deps, requester }: AuthedContext<UsersDeps>) {
  const fields = await deps.db.customProfileField.findMany({
    where: { realm_id: requester.realmId },
    orderBy: [{ order: 'asc' }, { id: 'asc' }],
  });
  return { custom_fields: fields.map(profileFieldDict) };
}

/** POST /realm/profile_fields (administrators). */
export async function createProfileField({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const input = params.parse({
    name: optional(param.string(), ''),
    hint: optional(param.string(), ''),
    field_type: required(param.int()),
    field_data: optional(param.json(v.dict((value: unknown) => value)), {}),
    display_in_profile_summary: optional(param.bool(), false),
    required: optional(param.bool(), false),
    editable_by_user: optional(param.bool(), true),
  });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const field = await doCreateProfileField(deps, actor.realm_id, {
    name: input.name,
    hint: input.hint,
    fieldType: input.field_type,
    fieldData: input.field_data,
    displayInProfileSummary: input.display_in_profile_summary,
    required: input.required,
    editableByUser: input.editable_by_user,
  });
  return { id: field.id };
}

/** PATCH /realm/profile_fields (administrators): `order` lists every field's id in its new place. */
export async function reorderProfileFields({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireAdministrator(actor);
  const { order } = params.parse({ order: required(param.json(v.list(v.int()))) });
  await doReorderProfileFields(deps, actor.realm_id, order);
  return {};
}

/** PATCH /users/me/profile_data */
export async function updateOwnProfileData({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { data } = params.parse({ data: required(param.json(profileDataUpdates)) });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireHuman(actor);
  await doUpdateOwnProfileData(deps, actor, data);
  return {};
}

/** DELETE /users/me/profile_data: data is a list of field ids to clear. */
export async function removeOwnProfileData({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { data } = params.parse({ data: required(param.json(v.list(v.id()))) });
  const { user: actor } = await loadActor(deps.db, requester.userId);
  requireHuman(actor);
  await doUpdateOwnProfileData(
    deps,
    actor,
    data.map((id) => ({ id, value: null })),
  );
  return {};
}
