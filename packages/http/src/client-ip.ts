// The client's address, one rule for every service (capture's `$ip`, decide's GeoIP lookup,
// local evaluation's rate-limit key). By default the first X-Forwarded-For entry: the original
// client as the edge and PostHog read it. With `trustedProxyHops` N, the Nth entry from the
// right instead, the address the outermost of N trusted proxies saw: entries a client wrote
// itself further left are then ignored. Without the header, the socket's peer. The address is
// normalised: `[v6]:port` and `[v6]` lose their brackets and port, `a.b.c.d:port` its port, and
// an IPv4-mapped IPv6 address becomes the IPv4 one. Anything else is passed on as given
// (capture stores it, GeoIP finds nothing for it).
import { isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

export interface ClientIpOptions {
  /** Proxies in front of the service that append to X-Forwarded-For; 0 or absent: first entry. */
  trustedProxyHops?: number;
}

const V4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/;

export function normaliseIp(raw: string): string {
  let ip = raw.trim();
  if (ip.startsWith('[')) {
    const end = ip.indexOf(']');
    if (end > 0) ip = ip.slice(1, end);
  }
  if (ip.length > 7 && ip.slice(0, 7).toLowerCase() === '::ffff:' && isIP(ip.slice(7)) === 4)
    ip = ip.slice(7);
  const v4 = V4_WITH_PORT.exec(ip);
  return v4 ? v4[1]! : ip;
}

function forwardedEntry(header: string | string[] | undefined, hops: number): string | undefined {
  if (header === undefined) return undefined;
  const joined = Array.isArray(header) ? header.join(',') : header;
  if (hops <= 0) {
    const comma = joined.indexOf(',');
    const first = (comma === -1 ? joined : joined.slice(0, comma)).trim();
    return first === '' ? undefined : first;
  }
  const entries = joined.split(',');
  const entry = entries[Math.max(0, entries.length - hops)]?.trim();
  return entry === '' ? undefined : entry;
}

export function clientIp(
  headers: IncomingHttpHeaders,
  socketAddress: string | undefined,
  opts: ClientIpOptions = {},
): string | undefined {
  const raw = forwardedEntry(headers['x-forwarded-for'], opts.trustedProxyHops ?? 0) ?? socketAddress;
  if (raw === undefined) return undefined;
  const ip = normaliseIp(raw);
  return ip === '' ? undefined : ip;
}
