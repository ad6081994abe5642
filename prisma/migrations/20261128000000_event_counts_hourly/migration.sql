-- Hourly event counts per project and event name (docs/query.md, "Storage shape"): trends that
-- count events with no property filter or breakdown read whole hours here instead of the raw
-- rows. Kept exact by statement triggers on events in the same transaction as every write:
-- an insert adds the rows it stored (ON CONFLICT DO NOTHING leaves redelivered ones out of the
-- transition table), a delete takes away what it removed, a truncate empties it. Rows are locked
-- in key order, so two batches written at once cannot deadlock on them. Hours are UTC.
CREATE TABLE "event_counts_hourly" (
    "team_id" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "event_counts_hourly_pkey" PRIMARY KEY ("team_id", "event", "hour")
);

-- Trends of every event read a project's hours across names.
CREATE INDEX "event_counts_hourly_team_id_hour_idx" ON "event_counts_hourly"("team_id", "hour");

CREATE FUNCTION "event_counts_hourly_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_counts_hourly AS c (team_id, event, hour, count)
  SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC'), count(*)
    FROM stored_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (team_id, event, hour) DO UPDATE SET count = c.count + EXCLUDED.count;
  RETURN NULL;
END $$;

CREATE FUNCTION "event_counts_hourly_remove"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Locked in key order first, as inserts lock them, so a delete and a batch cannot deadlock.
  PERFORM 1 FROM event_counts_hourly c
    WHERE (c.team_id, c.event, c.hour) IN
          (SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC') FROM removed_rows)
    ORDER BY c.team_id, c.event, c.hour FOR UPDATE;
  UPDATE event_counts_hourly c SET count = c.count - g.n
    FROM (SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC') AS hour, count(*) AS n
            FROM removed_rows GROUP BY 1, 2, 3) g
   WHERE c.team_id = g.team_id AND c.event = g.event AND c.hour = g.hour;
  DELETE FROM event_counts_hourly c
   WHERE c.count <= 0 AND (c.team_id, c.event, c.hour) IN
         (SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC') FROM removed_rows);
  RETURN NULL;
END $$;

CREATE FUNCTION "event_counts_hourly_clear"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE event_counts_hourly;
  RETURN NULL;
END $$;

CREATE TRIGGER "events_counts_add" AFTER INSERT ON "events"
  REFERENCING NEW TABLE AS stored_rows FOR EACH STATEMENT EXECUTE FUNCTION "event_counts_hourly_add"();
CREATE TRIGGER "events_counts_remove" AFTER DELETE ON "events"
  REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION "event_counts_hourly_remove"();
CREATE TRIGGER "events_counts_clear" AFTER TRUNCATE ON "events"
  FOR EACH STATEMENT EXECUTE FUNCTION "event_counts_hourly_clear"();

-- What is stored already.
INSERT INTO "event_counts_hourly" ("team_id", "event", "hour", "count")
SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC'), count(*) FROM "events" GROUP BY 1, 2, 3;
