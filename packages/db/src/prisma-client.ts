// Builds the generated Prisma client on @prisma/adapter-pg (no native query engine).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';
import { pgTimeoutConfig, type PgTimeouts } from './pg-pool';

export type CreatePrismaOptions = {
  databaseUrl: string;
  /** Pool size of the adapter's pg.Pool (pg's default is 10). */
  maxConnections?: number;
  timeouts?: PgTimeouts;
};

/** A PrismaClient for `databaseUrl`. Call `$disconnect()` on shutdown to close its pool. */
export function createPrisma({ databaseUrl, maxConnections, timeouts }: CreatePrismaOptions): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    ...(maxConnections ? { max: maxConnections } : {}),
    ...pgTimeoutConfig(timeouts),
  });
  return new PrismaClient({ adapter });
}
