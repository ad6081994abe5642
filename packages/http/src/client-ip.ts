// The client's address, one rule for every service (capture's `$ip`, decide's GeoIP lookup,
// the unknown-key throttles of local evaluation and management). X-Forwarded-For is believed
// only as far as it was written by proxies the operator declared: with `trustedProxyHops` N,
// the Nth entry from the right, the address the outermost of N trusted proxies saw (entries
// further left are whatever the client sent, and are ignored); with 0 (the default) no entry at
// all, only the socket's peer, because without a proxy in front anyone can write the header.
// Without the header, the socket's peer. The address is normalised: `[v6]:port` and `[v6]` lose
// their brackets and port, `a.b.c.d:port` its port, and an IPv4-mapped IPv6 address becomes the
// IPv4 one. Anything else is passed on as given (capture stores it, GeoIP finds nothing for it).
import { isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

export interface ClientIpOptions {
  /** Proxies in front of the service that append to X-Forwarded-For (TRUSTED_PROXY_HOPS); 0 or
   * absent: the header is ignored and the socket's peer is the client. */
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
  if (header === undefined || hops <= 0) return undefined;
  const joined = Array.isArray(header) ? header.join(',') : header;
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
