// @sett/db: the Prisma client (generated from prisma/schema.prisma) on the pg driver adapter,
// plain pg pools for bulk paths, and database/migration helpers for start-up and tests.
export * from './generated/prisma/client';
export { createPrisma } from './prisma-client';
export type { CreatePrismaOptions } from './prisma-client';
export { createPgPool, endPool, pgTimeoutConfig } from './pg-pool';
export type { CreatePgPoolOptions, PgTimeouts } from './pg-pool';
export { ensureDatabase, quoteIdent, withDatabase, withMaintenanceClient } from './ensure-database';
export { migrateDeploy, migrationsUpToDate, localMigrations, repoRoot } from './migrations';
export type { MigrateDeployOptions, LocalMigration } from './migrations';
export { createMigrationAdapter, parseDatabaseUrl } from './migration-adapter';
export type { MigrationConnection } from './migration-adapter';
export { findProjectByToken } from './projects';
export type { SqlRunner } from './projects';
export {
  PARTITION_MIGRATION,
  onlinePartitionState,
  preparePartitionedEvents,
  copyEventsOnline,
  compareEventsOnline,
  finishPartitionedEvents,
} from './online-partition';
export type { OnlinePartitionState, CopyProgress } from './online-partition';
