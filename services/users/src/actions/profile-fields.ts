// Custom profile fields (Zulip's zerver/actions/custom_profile_fields.py): the realm's fields,
// created by administrators, and each user's values, Markdown-rendered for the text types.

import { JsonableError } from '@teamchat/core';
import { transaction, type CustomProfileField, type Tx, type UserProfile } from '@teamchat/db';
import {
  isAdministrator,
  PROFILE_FIELD_TYPES,
  profileFieldDict,
  renderMarkdown,
  userIdsWhoCanAccessUser,
  lockRealm,
} from '@teamchat/domain';
import type { BaseDeps } from '@teamchat/runtime';
import { activeUserIds } from '../lib/users';

type Deps = Pick<BaseDeps, 'db' | 'bus'>;

export const ProfileFieldType = {
  SHORT_TEXT: 1,
  LONG_TEXT: 2,
  SELECT: 3,
  DATE: 4,
  URL: 5,
  USER: 6,
  EXTERNAL_ACCOUNT: 7,
  PRONOUNS: 8,
} as const;

/** Types whose values are Markdown, stored with their rendering (Zulip's is_renderable). */
const RENDERED_TYPES: readonly number[] = [ProfileFieldType.SHORT_TEXT, ProfileFieldType.LONG_TEXT];

const NAME_MAX_LENGTH = 40;
const HINT_MAX_LENGTH = 80;
const MAX_SUMMARY_FIELDS = 2;
/** Zulip's DEFAULT_EXTERNAL_ACCOUNTS: a field of one of these takes its name and hint from here. */
const DEFAULT_EXTERNAL_ACCOUNTS: Record<string, { name: string; hint: string }> = {
  github: { name: 'GitHub', hint: '' },
  twitter: { name: 'Twitter', hint: '' },
};
const EXTERNAL_ACCOUNT_SUBTYPES = Object.keys(DEFAULT_EXTERNAL_ACCOUNTS);

/** Zulip's is_default_external_field: an external account of a known site (not "custom"). */
function isDefaultExternalField(fieldType: number, data: Record<string, unknown>): boolean {
  return fieldType === ProfileFieldType.EXTERNAL_ACCOUNT && data.subtype !== 'custom';
}

export interface NewProfileField {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: Record<string, unknown>;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
}

function checkFieldData(fieldType: number, data: Record<string, unknown>): string {
  if (fieldType === ProfileFieldType.SELECT) {
    const choices = Object.entries(data);
    if (choices.length < 1) throw new JsonableError('Field must have at least one choice.');
    const texts = new Set<string>();
    for (const [key, choice] of choices) {
      const option = choice as Record<string, unknown> | null;
      if (typeof option !== 'object' || option === null || Array.isArray(option))
        throw new JsonableError(`field_data[${JSON.stringify(key)}] is not a dict`);
      for (const part of ['text', 'order']) {
        if (!(part in option))
          throw new JsonableError(`field_data[${JSON.stringify(key)}] is missing the '${part}' key`);
        if (typeof option[part] !== 'string')
          throw new JsonableError(`field_data[${JSON.stringify(key)}]["${part}"] is not a string`);
      }
      if (texts.has(option.text as string)) throw new JsonableError('Field must not have duplicate choices.');
      texts.add(option.text as string);
    }
    return JSON.stringify(data);
  }
  if (fieldType === ProfileFieldType.EXTERNAL_ACCOUNT) {
    const subtype = data.subtype;
    if (typeof subtype !== 'string') throw new JsonableError("field_data is missing the 'subtype' key");
    if (subtype === 'custom') {
      const pattern = data.url_pattern;
      if (typeof pattern !== 'string' || !pattern)
        throw new JsonableError('Custom external account must define URL pattern');
      if ((pattern.match(/%\(username\)s/g) ?? []).length !== 1)
        throw new JsonableError("URL pattern must contain '%(username)s'.");
    } else if (!EXTERNAL_ACCOUNT_SUBTYPES.includes(subtype)) {
      throw new JsonableError('Invalid external account type');
    }
    return JSON.stringify(data);
  }
  return '';
}

/** Zulip's create_realm_custom_profile_field checks, then the field and the custom_profile_fields event. */
export async function doCreateProfileField(
  deps: Deps,
  realmId: number,
  input: NewProfileField,
): Promise<CustomProfileField> {
  if (!PROFILE_FIELD_TYPES.some((type) => type.id === input.fieldType)) throw new JsonableError('Invalid field type.');
  if (
    input.displayInProfileSummary &&
    (input.fieldType === ProfileFieldType.LONG_TEXT || input.fieldType === ProfileFieldType.USER)
  ) {
    throw new JsonableError('Field type not supported for display in profile summary.');
  }
  let fieldData: string;
  if (isDefaultExternalField(input.fieldType, input.fieldData)) {
    // A known site's account field: its name and hint are the site's, whatever was sent
    // (Zulip's try_add_realm_default_custom_profile_field), and its data only the subtype.
    checkFieldData(input.fieldType, input.fieldData);
    const site = DEFAULT_EXTERNAL_ACCOUNTS[input.fieldData.subtype as string];
    input = { ...input, name: site.name, hint: site.hint };
    fieldData = JSON.stringify({ subtype: input.fieldData.subtype });
  } else {
    if (!input.name.trim()) throw new JsonableError('Label cannot be blank.');
    if ([...input.hint].length > HINT_MAX_LENGTH)
      throw new JsonableError(`hint is too long (limit: ${HINT_MAX_LENGTH} characters)`);
    if ([...input.name].length > NAME_MAX_LENGTH)
      throw new JsonableError(`name is too long (limit: ${NAME_MAX_LENGTH} characters)`);
    fieldData = checkFieldData(input.fieldType, input.fieldData);
  }
  return transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    if (input.displayInProfileSummary) {
      const shown = await tx.db.customProfileField.count({
        where: { realm_id: realmId, display_in_profile_summary: true },
      });
      if (shown >= MAX_SUMMARY_FIELDS)
        throw new JsonableError(
          `Only ${MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`,
        );
    }
    if (await tx.db.customProfileField.findFirst({ where: { realm_id: realmId, name: input.name } })) {
      throw new JsonableError('A field with that name already exists.');
    }
    const last = await tx.db.customProfileField.aggregate({ where: { realm_id: realmId }, _max: { order: true } });
    const field = await tx.db.customProfileField.create({
      data: {
        realm_id: realmId,
        name: input.name,
        hint: input.hint,
        field_type: input.fieldType,
        field_data: fieldData,
        order: (last._max.order ?? 0) + 1,
        display_in_profile_summary: input.displayInProfileSummary,
        required: input.required,
        editable_by_user: input.editableByUser,
      },
    });
    await notifyProfileFields(deps, tx, realmId);
    return field;
  });
}

/** The realm's fields, in order, to everyone (Zulip's notify_realm_custom_profile_fields). */
async function notifyProfileFields(deps: Deps, tx: Tx, realmId: number): Promise<void> {
  const fields = await tx.db.customProfileField.findMany({
    where: { realm_id: realmId },
    orderBy: [{ order: 'asc' }, { id: 'asc' }],
  });
  await deps.bus.sendEventOnCommit(
    tx,
    realmId,
    { type: 'custom_profile_fields', fields: fields.map(profileFieldDict) },
    await activeUserIds(tx.db, realmId),
  );
}

/**
 * PATCH /realm/profile_fields (Zulip's try_reorder_realm_custom_profile_fields): each field's
 * order becomes its place in `order`, which must name every field of the realm (ids of no
 * field are ignored); everyone gets the reordered list.
 */
export async function doReorderProfileFields(deps: Deps, realmId: number, order: number[]): Promise<void> {
  const place = new Map(order.map((id, index) => [id, index]));
  await transaction(deps.db, async (tx) => {
    await lockRealm(tx.db, realmId);
    const fields = await tx.db.customProfileField.findMany({ where: { realm_id: realmId }, select: { id: true } });
    if (fields.some((field) => !place.has(field.id))) throw new JsonableError('Invalid order mapping.');
    for (const field of fields) {
      await tx.db.customProfileField.update({ where: { id: field.id }, data: { order: place.get(field.id)! } });
    }
    await notifyProfileFields(deps, tx, realmId);
  });
}

/** One change of a user's values: a new value, or null / "" to clear it. */
export interface ProfileDataUpdate {
  id: number;
  value: string | number[] | null;
}

const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** The stored text of a value, checked by the field's type (Zulip's FIELD_VALIDATORS). */
async function checkValue(tx: Tx, field: CustomProfileField, value: string | number[]): Promise<string> {
  const name = field.name;
  if (field.field_type === ProfileFieldType.USER) {
    if (!Array.isArray(value)) throw new JsonableError(`${name} is not a list`);
    const users = await tx.db.userProfile.findMany({
      where: { id: { in: value }, realm_id: field.realm_id },
      select: { id: true, is_active: true, is_bot: true },
    });
    for (const id of value) {
      const user = users.find((candidate) => candidate.id === id);
      if (!user) throw new JsonableError(`Invalid user ID: ${id}`);
      if (!user.is_active) throw new JsonableError(`User with ID ${id} is deactivated`);
      if (user.is_bot) throw new JsonableError(`User with ID ${id} is a bot`);
    }
    return JSON.stringify(value);
  }
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
  const limit = field.field_type === ProfileFieldType.LONG_TEXT ? 500 : 50;
  switch (field.field_type) {
    case ProfileFieldType.SELECT: {
      const choices = field.field_data ? (JSON.parse(field.field_data) as Record<string, unknown>) : {};
      if (!(value in choices)) throw new JsonableError(`'${value}' is not a valid choice for '${name}'.`);
      return value;
    }
    case ProfileFieldType.DATE:
      if (!DATE_PATTERN.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)))
        throw new JsonableError(`${name} is not a date`);
      return value;
    case ProfileFieldType.URL:
      try {
        const url = new URL(value);
        if (!['http:', 'https:'].includes(url.protocol)) throw new Error('scheme');
      } catch {
        throw new JsonableError(`${name} is not a URL`);
      }
      return value;
    default:
      if ([...value].length > limit) throw new JsonableError(`${name} is too long (limit: ${limit} characters)`);
      return value;
  }
}

/**
 * Sets or clears values of `targetId` on behalf of `actor` (Zulip's
 * validate_user_custom_profile_data + do_update_user_custom_profile_data_if_changed): every
 * entry is checked before anything changes; each changed value is announced to those who
 * may see the user.
 */
export async function setProfileData(
  deps: Deps,
  tx: Tx,
  actor: UserProfile,
  targetId: number,
  updates: ProfileDataUpdate[],
): Promise<void> {
  const target = await tx.db.userProfile.findUniqueOrThrow({ where: { id: targetId } });
  const fields = await tx.db.customProfileField.findMany({
    where: { realm_id: target.realm_id, id: { in: updates.map((update) => update.id) } },
  });
  const planned: { field: CustomProfileField; value: string | null }[] = [];
  for (const update of updates) {
    const field = fields.find((candidate) => candidate.id === update.id);
    if (!field) throw new JsonableError(`Field id ${update.id} not found.`);
    if (!isAdministrator(actor.role) && !field.editable_by_user) {
      throw new JsonableError('You are not allowed to change this field. Contact an administrator to update it.');
    }
    const empty =
      update.value === null || update.value === '' || (Array.isArray(update.value) && update.value.length === 0);
    planned.push({ field, value: empty ? null : await checkValue(tx, field, update.value!) });
  }
  const audience = await userIdsWhoCanAccessUser(tx.db, target);
  for (const { field, value } of planned) {
    const existing = await tx.db.customProfileFieldValue.findUnique({
      where: { user_profile_id_field_id: { user_profile_id: target.id, field_id: field.id } },
    });
    if ((existing?.value ?? null) === value) continue;
    const rendered = value !== null && RENDERED_TYPES.includes(field.field_type) ? renderMarkdown(value) : null;
    if (value === null) {
      await tx.db.customProfileFieldValue.delete({ where: { id: existing!.id } });
    } else {
      await tx.db.customProfileFieldValue.upsert({
        where: { user_profile_id_field_id: { user_profile_id: target.id, field_id: field.id } },
        create: { user_profile_id: target.id, field_id: field.id, value, rendered_value: rendered },
        update: { value, rendered_value: rendered },
      });
    }
    const change = rendered === null ? { id: field.id, value } : { id: field.id, value, rendered_value: rendered };
    await deps.bus.sendEventOnCommit(
      tx,
      target.realm_id,
      { type: 'realm_user', op: 'update', person: { user_id: target.id, custom_profile_field: change } },
      audience,
    );
  }
}

/** PATCH /users/me/profile_data */
export async function doUpdateOwnProfileData(
  deps: Deps,
  actor: UserProfile,
  updates: ProfileDataUpdate[],
): Promise<void> {
  await transaction(deps.db, (tx) => setProfileData(deps, tx, actor, actor.id, updates));
}
