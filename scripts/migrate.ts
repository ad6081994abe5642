// Creates the database named by DATABASE_URL when it is missing, then applies migrations.
import { ensureDatabase, migrateDeploy } from '@sett/db';

async function main() {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set');
  await ensureDatabase(databaseUrl);
  await migrateDeploy({ databaseUrl });
}

main().catch((err) => {
  process.stderr.write(`migrate: ${(err as Error).message}\n`);
  process.exit(1);
});
