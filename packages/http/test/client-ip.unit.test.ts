// The one client-address rule capture ($ip), decide (GeoIP), local evaluation and management
// (unknown-key throttles) share.
import { clientIp } from '../src';

const xff = (value: string | string[]) => ({ 'x-forwarded-for': value });

describe('clientIp', () => {
  it('without trusted proxies, ignores X-Forwarded-For: the socket peer is the client', () => {
    expect(clientIp(xff('13.106.122.3, 10.0.0.1'), '127.0.0.1')).toBe('127.0.0.1');
    expect(clientIp(xff('203.0.113.77'), '198.51.100.7', { trustedProxyHops: 0 })).toBe('198.51.100.7');
    expect(clientIp({}, '127.0.0.1')).toBe('127.0.0.1');
    expect(clientIp({}, undefined)).toBeUndefined();
    expect(clientIp(xff('9.9.9.9'), undefined)).toBeUndefined();
  });

  it('with one trusted proxy, an empty or missing entry falls back to the socket peer', () => {
    const one = { trustedProxyHops: 1 };
    expect(clientIp(xff(''), '127.0.0.1', one)).toBe('127.0.0.1');
    expect(clientIp(xff('1.2.3.4, '), '127.0.0.1', one)).toBe('127.0.0.1');
    expect(clientIp(xff(['9.9.9.9, 8.8.8.8', '7.7.7.7']), undefined, one)).toBe('7.7.7.7');
  });

  it('normalises brackets, ports and IPv4-mapped addresses the same way wherever they appear', () => {
    for (const [given, expected] of [
      ['81.2.69.142:5555', '81.2.69.142'],
      ['[2001:db8::1]:443', '2001:db8::1'],
      ['[2001:db8::1]', '2001:db8::1'],
      ['2001:db8::1', '2001:db8::1'],
      ['::ffff:81.2.69.142', '81.2.69.142'],
      ['::FFFF:81.2.69.142', '81.2.69.142'],
      ['[::ffff:81.2.69.142]:80', '81.2.69.142'],
      ['::ffff:999.1.1.1', '::ffff:999.1.1.1'],
    ]) {
      expect(clientIp(xff(given!), undefined, { trustedProxyHops: 1 })).toBe(expected);
      expect(clientIp({}, given)).toBe(expected);
    }
  });

  it('passes what is not an address through unchanged (GeoIP then finds nothing)', () => {
    expect(clientIp(xff('garbage'), '127.0.0.1', { trustedProxyHops: 1 })).toBe('garbage');
    expect(clientIp(xff('0x7f.1'), '127.0.0.1', { trustedProxyHops: 1 })).toBe('0x7f.1');
  });

  it('with trusted proxy hops, takes the address the outermost trusted proxy saw', () => {
    const headers = xff('6.6.6.6, 13.106.122.3, 10.0.0.1');
    expect(clientIp(headers, '10.0.0.2', { trustedProxyHops: 1 })).toBe('10.0.0.1');
    expect(clientIp(headers, '10.0.0.2', { trustedProxyHops: 2 })).toBe('13.106.122.3');
    // More hops than entries: the leftmost entry.
    expect(clientIp(headers, '10.0.0.2', { trustedProxyHops: 5 })).toBe('6.6.6.6');
  });
});
