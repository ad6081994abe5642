// The driver adapter that Prisma's CLI (schema engine "js", WebAssembly) migrates through.
// prisma.config.ts imports this file directly. @prisma/adapter-pg 6.x has rough edges under
// the migration engine (docs/architecture.md, "Postgres"), each fixed below with a comment
// saying which; the fourth was found while writing our first migration.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';

const OID_NAME = 19;
const OID_CHAR = 18;
const OID_NAME_ARRAY = 1003;
const OID_CHAR_ARRAY = 1002;
const OID_TEXT = 25;
const OID_TEXT_ARRAY = 1009;

// pg's text[] parser; pg-types' TypeId enum lists no array oids, hence the cast.
type TypeId = Parameters<typeof pg.types.getTypeParser>[0];
const parseTextArray = pg.types.getTypeParser(OID_TEXT_ARRAY as TypeId, 'text') as (
  value: string,
) => string[];

type FieldLike = { dataTypeID: number };
type ResultLike = { fields?: FieldLike[]; rows?: unknown[] };

// Fix 1: the engine's catalog queries return `name` and `"char"` columns (oids 19, 18; arrays
// 1003, 1002), which adapter-pg refuses ("Column type 'name' could not be deserialized",
// Prisma issue 27403). Their text form is plain text, so relabel them as text / text[] (and
// parse the arrays, which pg leaves as '{a,b}' strings for these oids) before the adapter
// looks at the field types. One more step for "char": the engine reads columns such as
// pg_constraint.contype as a Character value and panics ("RuntimeError: unreachable") when
// handed Text, which happens as soon as the schema has a CHECK constraint. So the adapter's
// queryRaw (patchAdapter below) reports those columns as Character again.
// Row arrays of results that had "char" columns, with those columns' indexes: the adapter
// hands the pg result's rows array through unchanged, so queryRaw can find them again.
const charColumns = new WeakMap<object, number[]>();
const COLUMN_TYPE_CHARACTER = 6; // ColumnTypeEnum.Character in @prisma/driver-adapter-utils

function retypeCatalogColumns<T>(result: T): T {
  if (Array.isArray(result)) {
    result.forEach((r) => retypeCatalogColumns(r));
    return result;
  }
  const res = result as ResultLike | undefined;
  if (!res?.fields) return result;
  res.fields.forEach((field, i) => {
    if (field.dataTypeID === OID_CHAR && res.rows) {
      field.dataTypeID = OID_TEXT;
      charColumns.set(res.rows, [...(charColumns.get(res.rows) ?? []), i]);
    } else if (field.dataTypeID === OID_NAME) {
      field.dataTypeID = OID_TEXT;
    } else if (field.dataTypeID === OID_NAME_ARRAY || field.dataTypeID === OID_CHAR_ARRAY) {
      field.dataTypeID = OID_TEXT_ARRAY;
      for (const row of res.rows ?? []) {
        // Rows are arrays (adapter-pg uses rowMode "array") or objects keyed by name.
        if (Array.isArray(row)) {
          if (typeof row[i] === 'string') row[i] = parseTextArray(row[i]);
        } else if (row && typeof row === 'object') {
          const name = (field as unknown as { name: string }).name;
          const obj = row as Record<string, unknown>;
          if (typeof obj[name] === 'string') obj[name] = parseTextArray(obj[name] as string);
        }
      }
    }
  });
  return result;
}

// pg.Client whose query results are retyped (fix 1). Both the pool's own query (callback
// form) and transactions (promise form on a checked-out client) go through here.
class CatalogTextClient extends pg.Client {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      const callback = last as (err: Error | null, res: unknown) => void;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return (super.query as any)(...args.slice(0, -1), (err: Error | null, res: unknown) =>
        callback(err, err ? res : retypeCatalogColumns(res)),
      );
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const ret = (super.query as any)(...args);
    return ret && typeof ret.then === 'function' ? ret.then(retypeCatalogColumns) : ret;
  }
}

// Fix 3: the CLI process must exit as soon as the command is done. allowExitOnIdle lets
// pg-pool unref idle sockets and its idle timers, so an idle pool never keeps Node alive; a
// short idle timeout closes connections quickly. (The engine's own leftover timers are
// handled in prisma.config.ts.)
function migrationPoolConfig(base: pg.PoolConfig): pg.PoolConfig {
  return { ...base, max: 4, idleTimeoutMillis: 1000, allowExitOnIdle: true, Client: CatalogTextClient };
}

export type MigrationConnection = {
  host: string;
  port: number;
  user: string;
  password: string | undefined;
  database: string;
  ssl: pg.PoolConfig['ssl'];
};

/** Splits a postgres URL into the separate fields pg takes. */
export function parseDatabaseUrl(databaseUrl: string): MigrationConnection {
  const url = new URL(databaseUrl);
  const sslmode = url.searchParams.get('sslmode');
  const host = url.searchParams.get('host') ?? decodeURIComponent(url.hostname);
  return {
    host: host || '127.0.0.1',
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username) || process.env.USER || 'postgres',
    password: url.password ? decodeURIComponent(url.password) : undefined,
    database: decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres',
    ssl: sslmode && sslmode !== 'disable' ? { rejectUnauthorized: sslmode === 'verify-full' } : undefined,
  };
}

type PgAdapter = Awaited<ReturnType<PrismaPg['connect']>>;

// Applied to every adapter the engine gets (main and shadow): the Character part of fix 1,
// and fix 4.
// Fix 4 (found while writing our first migration): adapter-pg's executeScript splits a migration on
// every ";" and runs the pieces one by one, so a ";" inside a comment, a string literal or a
// function body breaks the migration ("syntax error at or near ..."), and a failure half way
// leaves the earlier statements applied. Send the script whole, as one simple-protocol query,
// as Prisma's native engine does: Postgres then runs it as a single implicit transaction.
function patchAdapter(adapter: PgAdapter): PgAdapter {
  const queryRaw = adapter.queryRaw.bind(adapter);
  adapter.queryRaw = async (query) => {
    const result = await queryRaw(query);
    for (const i of charColumns.get(result.rows) ?? [])
      result.columnTypes[i] = COLUMN_TYPE_CHARACTER as never;
    return result;
  };
  adapter.executeScript = async (script: string) => {
    try {
      await adapter.underlyingDriver().query(script);
    } catch (error) {
      // onError maps pg errors to the DriverAdapterError the engine understands, then throws.
      (adapter as unknown as { onError(e: unknown): never }).onError(error);
    }
  };
  return adapter;
}

// Fix 2: adapter-pg's connectToShadowDb spreads `{ ...config, database }`, but pg gives a
// connectionString precedence over `database`, so the "shadow" pool lands on the main
// database (migrate dev then fails with P3006 "... already exists"); and it drops the shadow
// database while that pool is still connected. Here the shadow gets its own pool built from
// separate fields, and that pool is closed before the DROP.
class MigrationPrismaPg extends PrismaPg {
  constructor(private readonly connection: MigrationConnection) {
    super(migrationPoolConfig({ ...connection }));
  }

  override async connect(): ReturnType<PrismaPg['connect']> {
    return patchAdapter(await super.connect());
  }

  override async connectToShadowDb(): ReturnType<PrismaPg['connectToShadowDb']> {
    const main = await this.connect();
    const database = `prisma_migrate_shadow_db_${globalThis.crypto.randomUUID()}`;
    await main.executeScript(`CREATE DATABASE "${database}"`);
    const shadow = patchAdapter(
      await new PrismaPg(migrationPoolConfig({ ...this.connection, database })).connect(),
    );
    const closeShadowPool = shadow.dispose.bind(shadow);
    shadow.dispose = async () => {
      try {
        await closeShadowPool();
        await main.executeScript(`DROP DATABASE IF EXISTS "${database}"`);
      } finally {
        await main.dispose();
      }
    };
    return shadow;
  }
}

/** The adapter factory for prisma.config.ts: migrations against `databaseUrl`. */
export function createMigrationAdapter(databaseUrl: string): PrismaPg {
  return new MigrationPrismaPg(parseDatabaseUrl(databaseUrl));
}
