// Names as Zulip checks them (zerver/lib/string_validation.py): printable characters, and the
// channel name rules shared by creating, renaming and addressing a channel.

import { JsonableError } from '@teamchat/core';
import { SERVER_LIMITS } from './realms';

const UNPRINTABLE = /[\p{Cc}\p{Cs}\p{Cn}]/u;

/** Zulip's check_string_is_printable: 1-based position of the first control, surrogate or unassigned character. */
export function unprintablePosition(text: string): number | null {
  let position = 0;
  for (const character of text) {
    position++;
    if (UNPRINTABLE.test(character)) return position;
  }
  return null;
}

/** Zulip's check_stream_name. */
export function checkStreamName(name: string): void {
  if (name.trim() === '') throw new JsonableError("Channel name can't be empty.");
  if ([...name].length > SERVER_LIMITS.max_stream_name_length) {
    throw new JsonableError(`Channel name too long (limit: ${SERVER_LIMITS.max_stream_name_length} characters).`);
  }
  const position = unprintablePosition(name);
  if (position !== null) throw new JsonableError(`Invalid character in channel name, at position ${position}.`);
}
