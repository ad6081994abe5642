-- Invites to an organization: an admin invites an email at a level; the invite's id is the secret
-- of its link (/#/signup/<id>), good for 3 days and once. At most one open invite per email and
-- organization.
CREATE TABLE "organization_invites" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organization_id" UUID NOT NULL,
    "target_email" TEXT NOT NULL,
    "first_name" TEXT NOT NULL DEFAULT '',
    "level" INTEGER NOT NULL DEFAULT 1,
    "message" TEXT,
    "created_by_id" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "accepted_at" TIMESTAMPTZ(6),
    CONSTRAINT "organization_invites_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "organization_invites_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE,
    CONSTRAINT "organization_invites_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL
);
CREATE INDEX "organization_invites_organization_id_created_at_idx" ON "organization_invites"("organization_id", "created_at" DESC);
CREATE UNIQUE INDEX "organization_invites_open_key" ON "organization_invites"("organization_id", lower("target_email")) WHERE "accepted_at" IS NULL;
