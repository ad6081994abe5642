-- SDK settings that remote config reads (PostHog's team field names), the project secret API
-- key (hashed; phs_...), and remote configuration flags.
-- AlterTable
ALTER TABLE "feature_flags" ADD COLUMN     "is_remote_configuration" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "teams" ADD COLUMN     "autocapture_exceptions_opt_in" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "autocapture_opt_out" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "autocapture_web_vitals_allowed_metrics" JSONB,
ADD COLUMN     "autocapture_web_vitals_opt_in" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "capture_dead_clicks" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "capture_performance_opt_in" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "heatmaps_opt_in" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "secret_api_token_backup_hash" TEXT,
ADD COLUMN     "secret_api_token_hash" TEXT,
ADD COLUMN     "secret_api_token_mask" TEXT,
ADD COLUMN     "session_recording_opt_in" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "surveys_opt_in" BOOLEAN NOT NULL DEFAULT false;

-- CreateIndex
CREATE UNIQUE INDEX "teams_secret_api_token_hash_key" ON "teams"("secret_api_token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "teams_secret_api_token_backup_hash_key" ON "teams"("secret_api_token_backup_hash");

