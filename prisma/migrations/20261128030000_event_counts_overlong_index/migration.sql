-- Whether a range holds an overlong value is asked before every breakdown the property counts
-- serve: a partial index holds only those rows, so the answer is one index probe. The counts were
-- filled by the migrations before this one in bulk: their statistics are gathered now, so the
-- planner reads them through their primary key (it took the project-wide index, with a filter
-- that discards every other event's rows, until autovacuum came by).
CREATE INDEX "event_property_counts_hourly_overlong_idx" ON "event_property_counts_hourly"("team_id", "property", "hour") WHERE "overlong";
ANALYZE "event_counts_hourly";
ANALYZE "event_property_counts_hourly";
