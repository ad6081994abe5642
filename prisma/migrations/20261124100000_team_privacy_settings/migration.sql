-- Per-project privacy settings read by ingestion: anonymize_ips (PostHog's "Discard client IP
-- data": no $ip is stored) and geoip_enabled ($geoip_* properties from the client address).
-- Expand only: new columns with defaults, so services of the previous release keep working.
ALTER TABLE "teams" ADD COLUMN "anonymize_ips" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "geoip_enabled" BOOLEAN NOT NULL DEFAULT true;
