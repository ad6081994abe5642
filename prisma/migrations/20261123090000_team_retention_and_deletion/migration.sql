-- Per-project data retention (null: keep forever) and soft deletion of projects.
ALTER TABLE "teams" ADD COLUMN "data_retention_days" INTEGER,
ADD COLUMN "deleted_at" TIMESTAMPTZ(6);

ALTER TABLE "teams" ADD CONSTRAINT "teams_data_retention_days_positive"
  CHECK ("data_retention_days" IS NULL OR "data_retention_days" > 0);
