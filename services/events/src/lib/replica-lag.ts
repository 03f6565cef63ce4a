// How far PostgreSQL's streaming standbys are behind, as the primary reports them
// (pg_stat_replication). Reads sent to a replica (DATABASE_REPLICA_URL) see the primary as it
// was that long ago, so an operator adding one watches this. Read at scrape time: one query on
// a view of the primary's shared memory. The lag columns are visible to superusers and to
// roles granted pg_monitor (docs/operations.md); for others they read as NULL, shown as 0.

import type { Db } from '@teamchat/db';
import { databaseMetrics } from '@teamchat/telemetry';

export interface StandbyLag {
  /** The standby's application_name (its cluster_name, or what its primary_conninfo names). */
  replica: string;
  seconds: number;
  bytes: number;
}

/** The streaming standbys of the primary `db` connects to, with their replay lag. */
export async function readStandbyLag(db: Db): Promise<StandbyLag[]> {
  // Several standbys may share an application_name: the slowest one speaks for them.
  return db.$queryRaw<StandbyLag[]>`
    SELECT application_name AS replica,
      max(COALESCE(extract(epoch FROM replay_lag), 0))::float8 AS seconds,
      max(COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0))::float8 AS bytes
    FROM pg_stat_replication
    WHERE state = 'streaming'
    GROUP BY application_name`;
}

/** Sets teamchat_db_replicas_streaming and the per-standby lag gauges (standbys gone drop out). */
export async function sampleStandbyLag(db: Db): Promise<void> {
  const standbys = await readStandbyLag(db);
  const metrics = databaseMetrics();
  metrics.replicas.set(standbys.length);
  metrics.replicaLagSeconds.reset();
  metrics.replicaLagBytes.reset();
  for (const { replica, seconds, bytes } of standbys) {
    metrics.replicaLagSeconds.set({ replica }, seconds);
    metrics.replicaLagBytes.set({ replica }, bytes);
  }
}
