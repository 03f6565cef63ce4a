// Users' full names as Zulip checks them (zerver/lib/users.py check_full_name).
import { JsonableError } from '@teamchat/core';

export const MAX_FULL_NAME_LENGTH = 100;
export const MIN_FULL_NAME_LENGTH = 2;
const NAME_INVALID_CHARACTERS = ['*', '`', '\\', '>', '"', '@'];

/** Zulip's check_full_name: the stripped name, or Zulip's error. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  if ([...name].length > MAX_FULL_NAME_LENGTH) throw new JsonableError('Name too long!');
  if ([...name].length < MIN_FULL_NAME_LENGTH) throw new JsonableError('Name too short!');
  // eslint-disable-next-line no-control-regex
  const hasControlCharacter = /[\u0000-\u001f\u007f-\u009f]/.test(name);
  if (hasControlCharacter || NAME_INVALID_CHARACTERS.some((character) => name.includes(character))) {
    throw new JsonableError('Invalid characters in name!');
  }
  // "Name|15" would read as a mention of user 15.
  if (/\|\d+$/.test(raw)) throw new JsonableError('Invalid format!');
  return name;
}
