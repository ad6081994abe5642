-- HogQL's groupArray(n)(x): an aggregate that keeps at most n values, so that a group of any
-- size never holds more than n of them in memory (array_agg would hold them all, then slice).
-- Nulls are skipped, as ClickHouse skips them.
CREATE FUNCTION sett_group_array_step(state anycompatiblearray, value anycompatible, cap integer)
RETURNS anycompatiblearray
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN value IS NOT NULL AND coalesce(cardinality(state), 0) < cap THEN array_append(state, value) ELSE state END $$;

CREATE AGGREGATE sett_group_array(anycompatible, integer) (
  SFUNC = sett_group_array_step,
  STYPE = anycompatiblearray,
  INITCOND = '{}'
);
