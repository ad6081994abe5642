-- Event and property definitions: which events and properties a project has seen, kept by
-- ingestion with one upsert per batch for names it has not seen recently. Expand only.
CREATE TABLE "event_definitions" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "team_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "last_seen_at" TIMESTAMPTZ(6),
    -- Events of the last 30 days, refreshed by the definition_volumes job (null until then).
    "volume_30_day" INTEGER,
    CONSTRAINT "event_definitions_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "event_definitions_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "event_definitions_team_id_name_key" ON "event_definitions"("team_id", "name");

-- type: 1 event, 2 person, 3 group (group_type_index 0..4; -1 for the other types, so the
-- unique index needs no NULL handling).
CREATE TABLE "property_definitions" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "team_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "type" SMALLINT NOT NULL,
    "group_type_index" SMALLINT NOT NULL DEFAULT -1,
    "property_type" TEXT,
    "is_numerical" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "property_definitions_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "property_definitions_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE,
    CONSTRAINT "property_definitions_type_check" CHECK ("type" IN (1, 2, 3)),
    CONSTRAINT "property_definitions_group_check" CHECK (("type" = 3) = ("group_type_index" BETWEEN 0 AND 4) AND ("type" = 3 OR "group_type_index" = -1)),
    CONSTRAINT "property_definitions_property_type_check" CHECK ("property_type" IN ('Numeric', 'String', 'Boolean', 'DateTime'))
);
CREATE UNIQUE INDEX "property_definitions_team_type_name_key" ON "property_definitions"("team_id", "type", "group_type_index", "name");

-- Which event carried which property (property_definitions' event_names filter).
CREATE TABLE "event_properties" (
    "team_id" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "property" TEXT NOT NULL,
    CONSTRAINT "event_properties_pkey" PRIMARY KEY ("team_id", "event", "property"),
    CONSTRAINT "event_properties_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE
);
CREATE INDEX "event_properties_team_id_property_idx" ON "event_properties"("team_id", "property");

-- Group types' display names (PostHog's update_metadata).
ALTER TABLE "group_type_mappings" ADD COLUMN "name_singular" TEXT;
ALTER TABLE "group_type_mappings" ADD COLUMN "name_plural" TEXT;
