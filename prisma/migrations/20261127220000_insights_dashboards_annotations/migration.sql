-- Saved insights, dashboards with their tiles (an insight or a text), and annotations.
-- Soft-deleted (deleted = true), as PostHog keeps them. Expand only.
CREATE TABLE "insights" (
    "id" SERIAL NOT NULL,
    "team_id" INTEGER NOT NULL,
    "short_id" TEXT NOT NULL,
    "name" TEXT,
    "derived_name" TEXT,
    "description" TEXT NOT NULL DEFAULT '',
    "query" JSONB,
    "tags" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "favorited" BOOLEAN NOT NULL DEFAULT false,
    "saved" BOOLEAN NOT NULL DEFAULT false,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" INTEGER,
    "last_modified_by_id" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "last_modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "insights_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "insights_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE,
    CONSTRAINT "insights_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL,
    CONSTRAINT "insights_last_modified_by_id_fkey" FOREIGN KEY ("last_modified_by_id") REFERENCES "users"("id") ON DELETE SET NULL
);
CREATE UNIQUE INDEX "insights_team_id_short_id_key" ON "insights"("team_id", "short_id");
CREATE INDEX "insights_team_id_last_modified_at_idx" ON "insights"("team_id", "last_modified_at" DESC);

CREATE TABLE "dashboards" (
    "id" SERIAL NOT NULL,
    "team_id" INTEGER NOT NULL,
    "name" TEXT,
    "description" TEXT NOT NULL DEFAULT '',
    "pinned" BOOLEAN NOT NULL DEFAULT false,
    "tags" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "last_modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "dashboards_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "dashboards_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE,
    CONSTRAINT "dashboards_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL
);
CREATE INDEX "dashboards_team_id_idx" ON "dashboards"("team_id");

-- A tile shows an insight or a text (exactly one).
CREATE TABLE "dashboard_tiles" (
    "id" SERIAL NOT NULL,
    "dashboard_id" INTEGER NOT NULL,
    "insight_id" INTEGER,
    "text_body" TEXT,
    "layouts" JSONB NOT NULL DEFAULT '{}',
    "color" TEXT,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "last_modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "dashboard_tiles_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "dashboard_tiles_dashboard_id_fkey" FOREIGN KEY ("dashboard_id") REFERENCES "dashboards"("id") ON DELETE CASCADE,
    CONSTRAINT "dashboard_tiles_insight_id_fkey" FOREIGN KEY ("insight_id") REFERENCES "insights"("id") ON DELETE CASCADE,
    CONSTRAINT "dashboard_tiles_one_content_check" CHECK (("insight_id" IS NULL) <> ("text_body" IS NULL))
);
CREATE INDEX "dashboard_tiles_dashboard_id_idx" ON "dashboard_tiles"("dashboard_id");
CREATE INDEX "dashboard_tiles_insight_id_idx" ON "dashboard_tiles"("insight_id");
-- An insight is on a dashboard at most once (while its tile is not deleted).
CREATE UNIQUE INDEX "dashboard_tiles_dashboard_id_insight_id_live_key" ON "dashboard_tiles"("dashboard_id", "insight_id") WHERE NOT "deleted" AND "insight_id" IS NOT NULL;

-- scope: project (its project), organization (every project of the organization),
-- dashboard_item (one insight), dashboard (one dashboard).
CREATE TABLE "annotations" (
    "id" SERIAL NOT NULL,
    "team_id" INTEGER NOT NULL,
    "organization_id" UUID NOT NULL,
    "content" TEXT NOT NULL DEFAULT '',
    "date_marker" TIMESTAMPTZ(6),
    "scope" TEXT NOT NULL DEFAULT 'project',
    "creation_type" TEXT NOT NULL DEFAULT 'USR',
    "insight_id" INTEGER,
    "dashboard_id" INTEGER,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "annotations_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "annotations_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE,
    CONSTRAINT "annotations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE,
    CONSTRAINT "annotations_insight_id_fkey" FOREIGN KEY ("insight_id") REFERENCES "insights"("id") ON DELETE SET NULL,
    CONSTRAINT "annotations_dashboard_id_fkey" FOREIGN KEY ("dashboard_id") REFERENCES "dashboards"("id") ON DELETE SET NULL,
    CONSTRAINT "annotations_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL,
    CONSTRAINT "annotations_scope_check" CHECK ("scope" IN ('project', 'organization', 'dashboard_item', 'dashboard', 'recording')),
    CONSTRAINT "annotations_creation_type_check" CHECK ("creation_type" IN ('USR', 'GIT'))
);
CREATE INDEX "annotations_team_id_date_marker_idx" ON "annotations"("team_id", "date_marker" DESC);
CREATE INDEX "annotations_organization_id_idx" ON "annotations"("organization_id") WHERE "scope" = 'organization';
