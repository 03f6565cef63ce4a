-- The event tier's check that Redis never went back in time (services/events/src/lib/rollback-watch.ts):
-- epochs are issued here, written into Redis, and recorded as confirmed once Redis acknowledged them.
-- One row per Redis key namespace (REDIS_PREFIX) using this database.
CREATE TABLE "event_tier_epoch" (
    "namespace" TEXT NOT NULL,
    "issued" BIGINT NOT NULL DEFAULT 0,
    "confirmed" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "event_tier_epoch_pkey" PRIMARY KEY ("namespace")
);
