-- PostHog's test_account_filters: property filters that queries with filterTestAccounts apply,
-- to leave out internal and test users. Expand only: a new column with a default.
ALTER TABLE "teams" ADD COLUMN "test_account_filters" JSONB NOT NULL DEFAULT '[]';
