// The realm-wide parts of register's state — the same for every user of a realm, or of one
// class of users — built once per realm state version and kept in the event tier's memory. In
// a realm of 8,000 users the user list alone is most of a register's work (reading and building
// 8,000 user objects, then serializing 2.4 MB), and none of it changes often. Triggers set the
// realm's version (realm_state_version) to the id of every transaction that changes what these
// parts show: users' shown fields, custom profile fields and their values, groups, memberships,
// group settings, linkifiers, code playgrounds, custom emoji, channel folders. A register reads
// the version inside its own snapshot, so a part kept under that version is exactly what the
// snapshot would read: the cache never shows a register anything its snapshot does not.
// (Versions are transaction ids, not ordered by commit: an entry only ever matches or not.)

interface Entry {
  version: bigint;
  value: unknown;
  bytes: number;
}

/** Built parts by realm, part and variant; the least recently used go first past the budget. */
export class RealmStateCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get size(): number {
    return this.entries.size;
  }

  get<T>(key: string, version: bigint): T | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.version !== version) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value as T;
  }

  set(key: string, version: bigint, value: unknown, bytes: number): void {
    const old = this.entries.get(key);
    if (old) this.forget(key, old);
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { version, value, bytes });
    this.bytes += bytes;
    for (const [oldestKey, oldest] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(oldestKey, oldest);
    }
  }

  private forget(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

/** A JSON array of objects, with where each element's text lies, by id. */
export interface JsonList {
  text: string;
  spans: Map<number, { start: number; end: number }>;
}

export function jsonList<T>(items: T[], idOf: (item: T) => number): JsonList {
  const spans = new Map<number, { start: number; end: number }>();
  const parts: string[] = [];
  let offset = 1; // after "["
  for (const item of items) {
    const json = JSON.stringify(item);
    spans.set(idOf(item), { start: offset, end: offset + json.length });
    parts.push(json);
    offset += json.length + 1; // and the comma
  }
  return { text: `[${parts.join(',')}]`, spans };
}

/** Bytes a JsonList holds, about: its text and a span per element. */
export const jsonListBytes = (list: JsonList) => list.text.length + 64 * list.spans.size;

/** The list's text with element `id` replaced by what `patch` makes of it (unchanged: no copy). */
export function patchJsonListElement(
  list: JsonList,
  id: number,
  patch: (element: Record<string, unknown>) => Record<string, unknown>,
): string {
  const span = list.spans.get(id);
  if (!span) return list.text;
  const original = list.text.slice(span.start, span.end);
  const patched = JSON.stringify(patch(JSON.parse(original) as Record<string, unknown>));
  return patched === original ? list.text : list.text.slice(0, span.start) + patched + list.text.slice(span.end);
}
