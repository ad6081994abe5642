-- Which of an event's properties event_property_counts_hourly counts, and under what value, in
-- one place: the triggers, retention's partition drop, the query bench's load and the tests'
-- recount all read an event's counted values through this function (the planner inlines it).
-- The list is BREAKDOWN_COUNTED_PROPERTIES in packages/query/src/kinds/trends.ts.
CREATE FUNCTION "event_counted_values"(properties jsonb)
RETURNS TABLE (property text, overlong boolean, value text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT k.key, length(x.v) > 200, CASE WHEN length(x.v) > 200 THEN '' ELSE x.v END
    FROM unnest(ARRAY['$browser', '$os', '$current_url', '$pathname', '$referring_domain']) AS k(key)
   CROSS JOIN LATERAL (SELECT properties ->> k.key AS v) x
   WHERE x.v IS NOT NULL
$$;

CREATE OR REPLACE FUNCTION "event_counts_hourly_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_counts_hourly AS c (team_id, event, hour, count)
  SELECT team_id, event, date_trunc('hour', "timestamp", 'UTC'), count(*)
    FROM stored_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (team_id, event, hour) DO UPDATE SET count = c.count + EXCLUDED.count;
  INSERT INTO event_property_counts_hourly AS c (team_id, event, property, hour, overlong, value, count)
  SELECT r.team_id, r.event, v.property, date_trunc('hour', r."timestamp", 'UTC'), v.overlong, v.value, count(*)
    FROM stored_rows r CROSS JOIN LATERAL event_counted_values(r.properties) v
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

  -- The same for the property values' counts.
  PERFORM 1 FROM event_property_counts_hourly c
    WHERE (c.team_id, c.event, c.property, c.hour, c.overlong, c.value) IN
          (SELECT r.team_id, r.event, v.property, date_trunc('hour', r."timestamp", 'UTC'), v.overlong, v.value
             FROM removed_rows r CROSS JOIN LATERAL event_counted_values(r.properties) v)
    ORDER BY c.team_id, c.event, c.property, c.hour, c.overlong, c.value FOR UPDATE;
  UPDATE event_property_counts_hourly c SET count = c.count - g.n
    FROM (SELECT r.team_id, r.event, v.property, date_trunc('hour', r."timestamp", 'UTC') AS hour, v.overlong,
                 v.value, count(*) AS n
            FROM removed_rows r CROSS JOIN LATERAL event_counted_values(r.properties) v
           GROUP BY 1, 2, 3, 4, 5, 6) g
   WHERE (c.team_id, c.event, c.property, c.hour, c.overlong, c.value)
       = (g.team_id, g.event, g.property, g.hour, g.overlong, g.value);
  DELETE FROM event_property_counts_hourly c
   WHERE c.count <= 0 AND (c.team_id, c.event, c.property, c.hour, c.overlong, c.value) IN
         (SELECT r.team_id, r.event, v.property, date_trunc('hour', r."timestamp", 'UTC'), v.overlong, v.value
            FROM removed_rows r CROSS JOIN LATERAL event_counted_values(r.properties) v);
  RETURN NULL;
END $$;
