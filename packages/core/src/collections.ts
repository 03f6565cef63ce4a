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
