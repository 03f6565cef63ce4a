/**
 * Adds `value` to the list kept under `key`. Linear over a loop, unlike rebuilding the list
 * with a spread at every row, which is quadratic in a list's length (a system group's
 * members are the whole realm).
 */
export function appendTo<K, V>(lists: Map<K, V[]>, key: K, value: V): void {
  const list = lists.get(key);
  if (list) list.push(value);
  else lists.set(key, [value]);
}

/**
 * Orders strings by Unicode code points, as Python's `sorted` does (JavaScript's default sort
 * compares UTF-16 units, which puts characters beyond U+FFFF before U+E000–U+FFFF).
 */
export function compareCodePoints(a: string, b: string): number {
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const difference = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

/** `items` sorted by `key` in code-point order (Zulip sorts channel lists by name so). */
export function sortedByName<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => compareCodePoints(key(a), key(b)));
}
