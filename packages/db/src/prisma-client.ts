// Builds the generated Prisma client on @prisma/adapter-pg (no native query engine).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';

export type CreatePrismaOptions = {
  databaseUrl: string;
  /** Pool size of the adapter's pg.Pool (pg's default is 10). */
  maxConnections?: number;
};

/** A PrismaClient for `databaseUrl`. Call `$disconnect()` on shutdown to close its pool. */
export function createPrisma({ databaseUrl, maxConnections }: CreatePrismaOptions): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    ...(maxConnections ? { max: maxConnections } : {}),
  });
  return new PrismaClient({ adapter });
}
