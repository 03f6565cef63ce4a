// The register snapshot when the state is read on a streaming standby (DATABASE_REPLICA_URL).
//
// A standby's pg_current_snapshot() is not fit for the queue's xid check: in recovery
// PostgreSQL keeps every running xid in the snapshot's subxip array (it cannot tell top-level
// xids from subtransactions there) and pg_current_snapshot() prints only xip, so a transaction
// still running on the standby's snapshot is printed as committed (tests/replica shows it with
// a held transaction: "728:730:" where the primary says "728:730:728"). Its events would be
// dropped from the queue while the state lacks its change. The complete list is in the exported
// form of the same snapshot (pg_export_snapshot: its "sxp" lines), which the server writes to
// pg_snapshots/; pg_read_file reads it back (superuser, or pg_read_server_files). When that
// fails, or the standby's list overflowed ("sof:1"), the register is read on the primary.

import { UseThePrimary, type TxClient } from '@teamchat/db';
import type { Snapshot } from './snapshot';

const XID_SPACE = 2n ** 32n;

/** The exported snapshot's in-progress xids (32-bit, as the file lists them), or null when it overflowed. */
export function exportedInProgress(exported: string): number[] | null {
  const fields = exported.split('\n').map((line) => line.split(':'));
  if (fields.some(([name, value]) => name === 'sof' && value === '1')) return null;
  return fields.filter(([name]) => name === 'xip' || name === 'sxp').map(([, value]) => Number(value));
}

/** `xid` (32-bit) as a full 64-bit xid, given that it lies in [xmin, xmax) of `snapshot`. */
function fullXid(xid: number, snapshot: Snapshot): bigint {
  const xmin = BigInt(snapshot.xmin);
  let full = xmin - (xmin % XID_SPACE) + BigInt(xid);
  if (full < xmin) full += XID_SPACE;
  return full;
}

/**
 * The snapshot `printed` (pg_current_snapshot() on a standby, inside `db`'s transaction) with the
 * in-progress xids it omits. Throws UseThePrimary when they cannot be known.
 */
export async function completeStandbySnapshot(db: TxClient, printed: Snapshot): Promise<Snapshot> {
  // Nothing between xmin and xmax: nothing can be in progress, the printed form is exact.
  if (printed.xmin === printed.xmax) return printed;
  let exported: string;
  try {
    const [row] = await db.$queryRaw<{ exported: string }[]>`
      SELECT pg_read_file('pg_snapshots/' || pg_export_snapshot()) AS exported`;
    exported = row.exported;
  } catch (error) {
    throw new UseThePrimary(`standby snapshot unreadable: ${(error as Error).message}`);
  }
  const running = exportedInProgress(exported);
  if (!running) throw new UseThePrimary('standby snapshot overflowed');
  const xmax = BigInt(printed.xmax);
  const xip = [...new Set(running.map((xid) => fullXid(xid, printed)).filter((xid) => xid < xmax))];
  return { ...printed, xip: xip.sort((a, b) => (a < b ? -1 : 1)).map(String) };
}
