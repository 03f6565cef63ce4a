// A message's edit history as GET /messages/{id}/history shows it (Zulip's
// fill_edit_history_entries): message.edit_history stores, newest first, only what each edit
// changed; each snapshot here also carries the topic, content and channel the message had right
// after that edit, oldest first, starting with the message as sent.

import { EMPTY_TOPIC_DISPLAY_NAME, loadActor, viewerOf } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { realmMessageSettings, visibleEditHistory } from './context';
import { accessMessage } from './messages';

type Snapshot = Record<string, unknown> & { timestamp: number; user_id: number | null };

/**
 * Zulip's highlight_html_differences marks inserted and deleted text; this simpler form wraps
 * the new rendering as inserted when it changed.
 */
function htmlDiff(before: string, after: string): string {
  return before === after ? after : `<div><span class="highlight_text_inserted">${after}</span></div>`;
}

/** Null when the realm does not allow viewing edit history. */
export async function editHistory(
  deps: MessagesDeps,
  userId: number,
  messageId: number,
  allowEmptyTopicName: boolean,
): Promise<Snapshot[] | null> {
  const { user, realm } = await loadActor(deps.db, userId);
  const policy = realmMessageSettings(realm).message_edit_history_visibility_policy;
  if (policy === 'none') return null;
  const { message } = await accessMessage(deps.db, viewerOf(user), messageId);
  const stored = Array.isArray(message.edit_history) ? (message.edit_history as Snapshot[]) : [];
  const isStream = message.stream_id !== null;
  let content = message.content;
  let rendered = message.rendered_content ?? '';
  let topic = message.topic;
  let streamId = message.stream_id;
  const snapshots: Snapshot[] = [];
  for (const entry of stored) {
    const snapshot: Snapshot = { ...entry };
    if (isStream) {
      snapshot.topic = topic;
      if (typeof entry.prev_topic === 'string') topic = entry.prev_topic;
      if (typeof entry.prev_stream === 'number') {
        snapshot.stream = streamId;
        streamId = entry.prev_stream;
      }
    }
    snapshot.content = content;
    snapshot.rendered_content = rendered;
    if (typeof entry.prev_content === 'string') {
      content = entry.prev_content;
      rendered = typeof entry.prev_rendered_content === 'string' ? entry.prev_rendered_content : '';
      snapshot.content_html_diff = htmlDiff(rendered, snapshot.rendered_content as string);
    }
    snapshots.push(snapshot);
  }
  const original: Snapshot = {
    content,
    rendered_content: rendered,
    timestamp: Math.floor(message.date_sent.getTime() / 1000),
    user_id: message.sender_id,
  };
  if (isStream) original.topic = topic;
  snapshots.push(original);
  const shown = (name: unknown) => (name === '' && !allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : name);
  // With "moves", content edits are not shown: every snapshot shows the current content.
  const visible =
    policy === 'all' ? snapshots : visibleMoves(snapshots, message.content, message.rendered_content ?? '');
  return visible.reverse().map((snapshot) => {
    const out = { ...snapshot };
    if ('topic' in out) out.topic = shown(out.topic);
    if ('prev_topic' in out) out.prev_topic = shown(out.prev_topic);
    return out;
  });
}

function visibleMoves(snapshots: Snapshot[], content: string, rendered: string): Snapshot[] {
  const original = snapshots.at(-1)!;
  const moves = visibleEditHistory(snapshots.slice(0, -1), 'moves')!;
  return [...moves, original].map((snapshot) => {
    const { content_html_diff: _diff, ...rest } = snapshot;
    return { ...rest, content, rendered_content: rendered };
  });
}
