// Channel and topic names as Zulip checks them.
import { JsonableError } from '@teamchat/core';
import { SERVER_LIMITS } from '@teamchat/domain';

/** Position (1-based) of the first control or surrogate character, as check_string_is_printable. */
function unprintablePosition(text: string): number | null {
  let position = 0;
  for (const char of text) {
    position++;
    if (/[\p{Cc}\p{Cs}]/u.test(char)) return position;
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

export class ChannelExistsError extends JsonableError {
  constructor(name: string) {
    super(`Channel '${name}' already exists`, { code: 'CHANNEL_ALREADY_EXISTS' });
  }
}

/** Zulip's check_channel_folder_name (uniqueness is checked by the caller). */
export function checkFolderName(name: string): void {
  if (name.trim() === '') throw new JsonableError("Channel folder name can't be empty.");
  const position = unprintablePosition(name);
  if (position !== null) throw new JsonableError(`Invalid character in channel folder name, at position ${position}.`);
}

/** "(no topic)" and the empty topic's display name both mean the empty topic (spec conventions 7). */
export function topicNameFromApi(topic: string): string {
  const trimmed = topic.trim();
  if (trimmed === '(no topic)' || trimmed === SERVER_LIMITS.realm_empty_topic_display_name) return '';
  return topic;
}

/** Descriptions are one line: Zulip replaces newlines with spaces. */
export function singleLineDescription(description: string): string {
  return description.replace(/\n/g, ' ');
}
