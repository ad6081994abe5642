-- A personal API key may be limited to some projects or organizations (empty: all).
ALTER TABLE "personal_api_keys" ADD COLUMN "scoped_teams" INTEGER[] NOT NULL DEFAULT ARRAY[]::INTEGER[];
ALTER TABLE "personal_api_keys" ADD COLUMN "scoped_organizations" UUID[] NOT NULL DEFAULT ARRAY[]::UUID[];
