-- The groups list pages a group type newest first: (created_at, id) keyset on this index.
CREATE INDEX "groups_team_id_group_type_index_created_at_id_idx" ON "groups"("team_id", "group_type_index", "created_at" DESC, "id" DESC);
