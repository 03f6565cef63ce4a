// PostgreSQL snapshots as pg_current_snapshot()::text prints them: "xmin:xmax:xip,xip,...".
// A transaction id is visible in (committed before) the snapshot when it is below xmin, or
// below xmax and not listed as in progress (queue-store.ts applies that rule in Redis).

export interface Snapshot {
  xmin: string;
  xmax: string;
  xip: string[];
}

export function parseSnapshot(text: string): Snapshot {
  const match = /^(\d+):(\d+):([\d,]*)$/.exec(text.trim());
  if (!match) throw new Error(`not a PostgreSQL snapshot: ${text}`);
  return { xmin: match[1], xmax: match[2], xip: match[3] ? match[3].split(',') : [] };
}
