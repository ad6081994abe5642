-- Hourly event counts per value of the properties dashboards break down by most ($browser, $os,
-- $current_url, $pathname, $referring_domain; the list is BREAKDOWN_COUNTED_PROPERTIES in
-- packages/query/src/kinds/trends.ts): trends of total broken down by one of them read whole
-- hours here. Events without the property are the hour's count less its values'. A value longer
-- than 200 characters is not kept: its rows count under `overlong` (value ''), and a range
-- holding any reads the raw rows instead. Kept by the same statement triggers as
-- event_counts_hourly, in the same transaction, locked in key order.
CREATE TABLE "event_property_counts_hourly" (
    "team_id" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "property" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "overlong" BOOLEAN NOT NULL,
    "value" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "event_property_counts_hourly_pkey" PRIMARY KEY ("team_id", "event", "property", "hour", "overlong", "value")
);

-- Every event's breakdowns read a project's hours across names.
CREATE INDEX "event_property_counts_hourly_team_id_property_hour_idx" ON "event_property_counts_hourly"("team_id", "property", "hour");

CREATE OR REPLACE FUNCTION "event_counts_hourly_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_counts_hourly AS c (team_id, event, hour, count)
  SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC'), count(*)
    FROM stored_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (team_id, event, hour) DO UPDATE SET count = c.count + EXCLUDED.count;
  INSERT INTO event_property_counts_hourly AS c (team_id, event, property, hour, overlong, value, count)
  SELECT team_id, event, key, hour, length(v) > 200, CASE WHEN length(v) > 200 THEN '' ELSE v END, count(*)
    FROM (SELECT r.team_id, r.event, k.key, date_trunc('hour', r."timestamp", 'UTC') AS hour, r.properties ->> k.key AS v
            FROM stored_rows r
           CROSS JOIN unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)) x
   WHERE v IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (team_id, event, property, hour, overlong, value) DO UPDATE SET count = c.count + EXCLUDED.count;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "event_counts_hourly_remove"() RETURNS trigger LANGUAGE plpgsql AS $$
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

  -- The same for the property values' counts (what the delete removed, grouped, three times:
  -- deletes are rare, and a transition table cannot be handed to a function).
  PERFORM 1 FROM event_property_counts_hourly c
    JOIN (SELECT team_id, event, key AS property, hour, length(v) > 200 AS overlong,
           CASE WHEN length(v) > 200 THEN '' ELSE v END AS value, count(*) AS n
      FROM (SELECT r.team_id, r.event, k.key, date_trunc('hour', r."timestamp", 'UTC') AS hour, r.properties ->> k.key AS v
              FROM removed_rows r
             CROSS JOIN unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)) x
     WHERE v IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6) g USING (team_id, event, property, hour, overlong, value)
    ORDER BY c.team_id, c.event, c.property, c.hour, c.overlong, c.value FOR UPDATE OF c;
  UPDATE event_property_counts_hourly c SET count = c.count - g.n
    FROM (SELECT team_id, event, key AS property, hour, length(v) > 200 AS overlong,
           CASE WHEN length(v) > 200 THEN '' ELSE v END AS value, count(*) AS n
      FROM (SELECT r.team_id, r.event, k.key, date_trunc('hour', r."timestamp", 'UTC') AS hour, r.properties ->> k.key AS v
              FROM removed_rows r
             CROSS JOIN unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)) x
     WHERE v IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6) g
   WHERE (c.team_id, c.event, c.property, c.hour, c.overlong, c.value)
       = (g.team_id, g.event, g.property, g.hour, g.overlong, g.value);
  DELETE FROM event_property_counts_hourly c
   WHERE c.count <= 0 AND (c.team_id, c.event, c.property, c.hour, c.overlong, c.value) IN
         (SELECT team_id, event, property, hour, overlong, value FROM (SELECT team_id, event, key AS property, hour, length(v) > 200 AS overlong,
           CASE WHEN length(v) > 200 THEN '' ELSE v END AS value, count(*) AS n
      FROM (SELECT r.team_id, r.event, k.key, date_trunc('hour', r."timestamp", 'UTC') AS hour, r.properties ->> k.key AS v
              FROM removed_rows r
             CROSS JOIN unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)) x
     WHERE v IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6) g);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "event_counts_hourly_clear"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_counts_hourly;
  DELETE FROM event_property_counts_hourly;
  RETURN NULL;
END $$;

-- What is stored already.
INSERT INTO "event_property_counts_hourly" ("team_id", "event", "property", "hour", "overlong", "value", "count")
SELECT team_id, event, key, hour, length(v) > 200, CASE WHEN length(v) > 200 THEN '' ELSE v END, count(*)
  FROM (SELECT e.team_id, e.event, k.key, date_trunc('hour', e."timestamp", 'UTC') AS hour, e.properties ->> k.key AS v
          FROM "events" e
         CROSS JOIN unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)) x
 WHERE v IS NOT NULL
 GROUP BY 1, 2, 3, 4, 5, 6;
