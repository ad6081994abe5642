// Prisma CLI configuration: migrations run on the WebAssembly schema engine inside the
// `prisma` package (engine "js") through @prisma/adapter-pg, so nothing is downloaded.
// See docs/architecture.md, "Postgres": why Prisma 6 with the WebAssembly schema engine.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
// Imported by file, not through @sett/db's index: the index loads the generated client,
// which does not exist yet when `prisma generate` itself reads this config.
import { createMigrationAdapter } from './packages/db/src/migration-adapter';

// Fix 3 (second half): the WebAssembly schema engine arms 10 s timeouts (seen here; a minute
// elsewhere) that it never clears, so every CLI command lingered after its work was done. Its
// timers race real I/O (sockets keep the process alive while that I/O is pending), so they
// must not keep the process alive on their own: unref the timers the engine creates. Only
// timers armed from WebAssembly frames are touched; the CLI's own timers keep their meaning.
// This file is loaded only by the Prisma CLI, so no other process is affected.
const originalSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = Object.assign((...args: Parameters<typeof setTimeout>) => {
  const timer = originalSetTimeout(...args);
  if (new Error().stack?.includes('wasm://')) timer.unref();
  return timer;
}, originalSetTimeout) as typeof setTimeout;

export default defineConfig({
  schema: path.join(__dirname, 'prisma', 'schema.prisma'),
  migrations: { path: path.join(__dirname, 'prisma', 'migrations') },
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    const databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) throw new Error('DATABASE_URL is not set (e.g. postgresql://root@127.0.0.1:5432/sett)');
    return createMigrationAdapter(databaseUrl);
  },
});
