-- A TRUNCATE that names both events and event_counts_hourly (tests, the query bench) failed when
-- the trigger truncated the counts inside it ("being used by active queries"). The trigger now
-- deletes the counts' rows instead; by then a TRUNCATE naming both has emptied them already.
CREATE OR REPLACE FUNCTION "event_counts_hourly_clear"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM event_counts_hourly;
  RETURN NULL;
END $$;
