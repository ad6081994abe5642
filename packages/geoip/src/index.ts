export { openGeoIp, noGeoIp, geoipProperties, geoipLocation } from './geoip';
export type { GeoIp, GeoIpOptions } from './geoip';
