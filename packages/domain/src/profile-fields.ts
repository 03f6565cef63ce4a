// Custom profile fields (Zulip's CustomProfileField): the field types and the API form of a field.
import type { CustomProfileField } from '@teamchat/db';

/** Zulip's custom profile field types, by their API keyword. */
export const PROFILE_FIELD_TYPES: { id: number; keyword: string; name: string }[] = [
  { id: 1, keyword: 'SHORT_TEXT', name: 'Text (short)' },
  { id: 2, keyword: 'LONG_TEXT', name: 'Text (long)' },
  { id: 3, keyword: 'SELECT', name: 'List of options' },
  { id: 4, keyword: 'DATE', name: 'Date' },
  { id: 5, keyword: 'URL', name: 'Link' },
  { id: 6, keyword: 'USER', name: 'Users' },
  { id: 7, keyword: 'EXTERNAL_ACCOUNT', name: 'External account' },
  { id: 8, keyword: 'PRONOUNS', name: 'Pronouns' },
];

type ProfileFieldColumns = Pick<
  CustomProfileField,
  | 'id'
  | 'field_type'
  | 'order'
  | 'name'
  | 'hint'
  | 'field_data'
  | 'required'
  | 'editable_by_user'
  | 'display_in_profile_summary'
>;

/** A field as GET /realm/profile_fields, register and the custom_profile_fields event show it. */
export function profileFieldDict(field: ProfileFieldColumns) {
  return {
    id: field.id,
    type: field.field_type,
    order: field.order,
    name: field.name,
    hint: field.hint,
    field_data: field.field_data,
    required: field.required,
    editable_by_user: field.editable_by_user,
    ...(field.display_in_profile_summary ? { display_in_profile_summary: true } : {}),
  };
}
