-- Events partitioned by RANGE (uuid), and background jobs (person deletion, retention, project
-- purge). docs/data-lifecycle.md explains the design; in short:
--  * UUIDv7's first 48 bits are unix milliseconds, so a range of v7 uuids is a range of time.
--    One partition per calendar month of v7 time, in the schema "events_partitions" (out of
--    Prisma's sight: it only introspects "public", so the partitions never show as drift).
--  * uuid is part of the partition key and of the primary key (team_id, uuid): Postgres accepts
--    that unique key on a partitioned table, one uuid always lands in one partition, and
--    ingestion's INSERT ... ON CONFLICT (team_id, uuid) DO NOTHING is unchanged.
--  * Every uuid that is not in a monthly range (v4 and v5 uuids, v7 uuids of months without a
--    partition) goes to the DEFAULT partition, which retention cleans by batched DELETE.
--  * The job runner creates monthly partitions ahead of time; this migration creates the
--    months around the migration's date so a fresh database works before the first run.

CREATE SCHEMA IF NOT EXISTS "events_partitions";

ALTER TABLE "events" RENAME TO "events_unpartitioned";
ALTER TABLE "events_unpartitioned" RENAME CONSTRAINT "events_pkey" TO "events_unpartitioned_pkey";
ALTER INDEX "events_team_id_timestamp_uuid_idx" RENAME TO "events_unpartitioned_team_id_timestamp_uuid_idx";
ALTER INDEX "events_team_id_distinct_id_timestamp_idx" RENAME TO "events_unpartitioned_team_id_distinct_id_timestamp_idx";
ALTER INDEX "events_team_id_event_timestamp_idx" RENAME TO "events_unpartitioned_team_id_event_timestamp_idx";

CREATE TABLE "events" (
    "uuid" UUID NOT NULL,
    "team_id" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "distinct_id" TEXT NOT NULL,
    "person_id" UUID,
    "properties" JSONB NOT NULL DEFAULT '{}',
    "timestamp" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "group_0" TEXT,
    "group_1" TEXT,
    "group_2" TEXT,
    "group_3" TEXT,
    "group_4" TEXT,
    CONSTRAINT "events_pkey" PRIMARY KEY ("team_id","uuid")
) PARTITION BY RANGE ("uuid");

CREATE INDEX "events_team_id_timestamp_uuid_idx" ON "events"("team_id", "timestamp" DESC, "uuid" DESC);
CREATE INDEX "events_team_id_distinct_id_timestamp_idx" ON "events"("team_id", "distinct_id", "timestamp" DESC);
CREATE INDEX "events_team_id_event_timestamp_idx" ON "events"("team_id", "event", "timestamp" DESC);

CREATE TABLE "events_partitions"."events_default" PARTITION OF "events" DEFAULT;
-- Creating a monthly partition moves the default partition's rows of that uuid range (v4 uuids
-- whose random prefix happens to fall there) into it: this index finds them without a scan.
CREATE INDEX "events_default_uuid_idx" ON "events_partitions"."events_default"("uuid");

-- The lowest UUIDv7 of a moment: its unix milliseconds as the first 48 bits, the rest zero.
CREATE FUNCTION "events_partitions"."uuid7_floor"(t TIMESTAMPTZ) RETURNS UUID
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid
$$;

-- Monthly partitions from 12 months before this migration runs to 3 months after it.
DO $$
DECLARE
  m TIMESTAMPTZ;
BEGIN
  FOR i IN -12..3 LOOP
    m := date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + make_interval(months => i);
    EXECUTE format(
      'CREATE TABLE "events_partitions".%I PARTITION OF "events" FOR VALUES FROM (%L) TO (%L)',
      'events_p' || to_char(m AT TIME ZONE 'UTC', 'YYYY_MM'),
      "events_partitions"."uuid7_floor"(m),
      "events_partitions"."uuid7_floor"(m + interval '1 month'));
  END LOOP;
END $$;

INSERT INTO "events" SELECT "uuid", "team_id", "event", "distinct_id", "person_id", "properties",
  "timestamp", "created_at", "group_0", "group_1", "group_2", "group_3", "group_4"
  FROM "events_unpartitioned";
DROP TABLE "events_unpartitioned";

-- Background jobs run by the management service (services/management/src/jobs). A runner claims
-- a row with FOR UPDATE SKIP LOCKED and sets locked_until; a row whose lease ran out (its
-- process died) is claimed again. dedupe_key keeps one live job per purpose (e.g. one retention
-- run at a time).
CREATE TABLE "background_jobs" (
    "id" BIGSERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "team_id" INTEGER,
    "state" TEXT NOT NULL DEFAULT 'queued',
    "payload" JSONB NOT NULL DEFAULT '{}',
    "progress" JSONB NOT NULL DEFAULT '{}',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER NOT NULL DEFAULT 10,
    "last_error" TEXT,
    "dedupe_key" TEXT,
    "run_after" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "locked_by" TEXT,
    "locked_until" TIMESTAMPTZ(6),
    "created_by_id" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "background_jobs_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "background_jobs_state_run_after_idx" ON "background_jobs"("state", "run_after");
CREATE INDEX "background_jobs_team_id_kind_created_at_idx" ON "background_jobs"("team_id", "kind", "created_at" DESC);
CREATE UNIQUE INDEX "background_jobs_dedupe_key_key" ON "background_jobs"("dedupe_key");

ALTER TABLE "background_jobs" ADD CONSTRAINT "background_jobs_state_check"
  CHECK ("state" IN ('queued', 'running', 'succeeded', 'failed'));
