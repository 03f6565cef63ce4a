// Channel and topic names as Zulip checks them.
import { JsonableError } from '@teamchat/core';
import { SERVER_LIMITS, unprintablePosition } from '@teamchat/domain';

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
