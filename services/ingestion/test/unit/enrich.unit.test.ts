// The per-project step, pure: GeoIP as PostHog's transformation applies it, then anonymize_ips.
import type { GeoIp } from '@sett/geoip';
import { enrichEvent } from '../../src/pipeline/enrich';
import type { TeamEvent } from '../../src/pipeline/types';

const geoip: GeoIp = {
  lookup: () => ({}),
  locate: (ip) => (ip === '1.1.1.1' ? { country_code: 'AU', city_name: 'Sydney', latitude: -33.8 } : null),
};
const on = { anonymizeIps: false, geoipEnabled: true, ingestedEvent: false };

function event(properties: Record<string, unknown>): TeamEvent {
  return {
    offset: '0',
    uuid: '00000000-0000-4000-8000-000000000000',
    token: 'phc_x',
    distinctId: 'd',
    event: 'e',
    properties,
    propertiesJson: JSON.stringify(properties),
    timestamp: '2024-01-01T00:00:00.000Z',
    historical: false,
    processPerson: true,
    warnings: [],
    teamId: 1,
  };
}

it('adds the location to the event, $set and $set_once; the event’s own values win only outside the location', () => {
  const e = event({
    $ip: '1.1.1.1',
    $set: { plan: 'pro', $geoip_city_name: 'stale' },
    $set_once: { first: 1 },
  });
  expect(enrichEvent(e, on, geoip)).toBe(true);
  expect(e.properties).toMatchObject({ $ip: '1.1.1.1', $geoip_country_code: 'AU', $geoip_latitude: -33.8 });
  expect(e.properties.$set).toMatchObject({
    plan: 'pro',
    $geoip_city_name: 'Sydney',
    $geoip_country_code: 'AU',
    // Reset: the new address has no postal code, so the person's old one is cleared.
    $geoip_postal_code: null,
  });
  expect(e.properties.$set_once).toMatchObject({
    first: 1,
    $initial_geoip_country_code: 'AU',
    $initial_geoip_postal_code: null,
  });
  expect(JSON.parse(e.propertiesJson)).toEqual(e.properties);
});

it('does nothing without $ip, for an unknown address, with $geoip_disable or when the project turned GeoIP off', () => {
  for (const [props, settings] of [
    [{ a: 1 }, on],
    [{ $ip: '10.0.0.1' }, on],
    [{ $ip: '1.1.1.1', $geoip_disable: true }, on],
    [{ $ip: '1.1.1.1' }, { ...on, geoipEnabled: false }],
  ] as const) {
    const e = event({ ...props });
    const json = e.propertiesJson;
    expect(enrichEvent(e, settings, geoip)).toBe(false);
    expect(e.propertiesJson).toBe(json);
  }
});

it('anonymize_ips drops $ip after GeoIP used it', () => {
  const e = event({ $ip: '1.1.1.1' });
  enrichEvent(e, { ...on, anonymizeIps: true }, geoip);
  expect(e.properties).not.toHaveProperty('$ip');
  expect(e.properties.$geoip_country_code).toBe('AU');
  expect(e.propertiesJson).not.toContain('1.1.1.1');
  const unknown = event({ $ip: '10.0.0.1', keep: true });
  enrichEvent(unknown, { ...on, anonymizeIps: true }, geoip);
  expect(JSON.parse(unknown.propertiesJson)).toEqual({ keep: true });
});
