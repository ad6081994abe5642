// The generated parts of deploy/nginx/nginx.conf: the socket deadlines and body limits (in the
// http block) and the locations that send each path to its service (in the server block). The
// rest of the file (logging, request ids, the edge's own answers) is written by hand.
//
// How nginx picks a location, and why the routes are written as they are: exact paths are one
// regex location per service (`^/(a|b)/?$`: with or without the trailing slash); subtrees of a
// service are `^~` prefix locations, which no regex may take from them (the routing refuses an
// exact path inside another service's subtree, so nothing is lost); the fallback is a plain
// prefix location, so the regexes of exact paths under it (decide's public lists) win over it.
import type { EdgeRouting, EdgeService } from '@sett/http';
import { nginxSize, seconds, type EdgeSettings } from './edge-settings';

const ORDER: EdgeService[] = ['capture', 'decide', 'management'];

function escapeRegex(path: string): string {
  return path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** http-level directives: deadlines and the default body limit. */
export function nginxLimits(settings: EdgeSettings): string {
  const t = settings.timeouts;
  const smallest = Math.min(...Object.values(settings.services).map((s) => s.maxBodyBytes));
  return [
    '# The services own deadlines (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS,',
    '# HTTP_KEEP_ALIVE_TIMEOUT_MS at their defaults), held here too so that a slow or silent client',
    '# is cut off at the edge before it costs a service anything. nginx has no deadline for a whole',
    '# body: client_body_timeout bounds the gap between two reads instead, as the header deadline.',
    `client_header_timeout ${seconds(t.headersMs)};`,
    `client_body_timeout ${seconds(t.headersMs)};`,
    `send_timeout ${seconds(t.requestMs)};`,
    `keepalive_timeout ${seconds(t.keepAliveMs)};`,
    '# A client cut off by a deadline is reset at once, not left to linger in FIN-WAIT.',
    'reset_timedout_connection on;',
    '# After an early answer (413), the rest of the body is read and dropped for up to this long, so',
    '# that the client reads the answer instead of a reset connection.',
    'lingering_close on;',
    `lingering_time ${seconds(t.lingerMs)};`,
    'lingering_timeout 5s;',
    `proxy_connect_timeout ${seconds(t.connectMs)};`,
    `proxy_send_timeout ${seconds(t.requestMs)};`,
    `proxy_read_timeout ${seconds(t.requestMs)};`,
    `client_max_body_size ${nginxSize(smallest)};`,
    'client_body_buffer_size 128k;',
  ].join('\n');
}

/** server-level directives: each service's address and the locations routing to it. */
export function nginxRoutes(routing: EdgeRouting, settings: EdgeSettings): string {
  const out: string[] = [
    '# host:port of each service, resolved per request (see `resolver` above).',
    ...ORDER.map((s) => `set $${s}_addr ${settings.services[s].composeAddress};`),
  ];
  const body = (service: EdgeService): string[] => {
    const s = settings.services[service];
    const lines = [`client_max_body_size ${nginxSize(s.maxBodyBytes)};`];
    // Streamed as they arrive (no buffering to disk here): the service sees the body at once
    // and enforces its own limit.
    if (s.streamBodies) lines.push('proxy_request_buffering off;');
    lines.push(`proxy_pass http://$${service}_addr;`);
    return lines.map((l) => `    ${l}`);
  };
  for (const service of ORDER) {
    const exact = routing.routes.filter((r) => r.match === 'exact' && r.service === service);
    // The root has one form: an exact location of its own.
    if (exact.some((r) => r.path === '/')) {
      out.push('');
      out.push(`# ${service}: the root path.`);
      out.push('location = / {', ...body(service), '}');
    }
    const named = exact.filter((r) => r.path !== '/');
    if (named.length > 0) {
      out.push('');
      out.push(`# ${service}: exact paths, with or without the trailing slash.`);
      out.push(`location ~ ^/(${named.map((r) => escapeRegex(r.path.slice(1))).join('|')})/?$ {`);
      out.push(...body(service), '}');
    }
    for (const r of routing.routes.filter((r) => r.match === 'prefix' && r.service === service)) {
      out.push('');
      out.push(`# ${service}: ${r.from.join(', ')}`);
      out.push(`location ^~ ${r.path} {`, ...body(service), '}');
      // Without this, nginx answers the path without its slash with a redirect to the subtree.
      out.push(`location = ${r.path.slice(0, -1)} {`, '    return 404;', '}');
    }
    if (routing.fallback.service === service) {
      const fb = routing.fallback;
      out.push('');
      out.push(`# ${service}: everything else under ${fb.prefix} (the exact paths above win over it).`);
      out.push(`location ${fb.prefix} {`, ...body(service), '}');
      out.push(`location = ${fb.prefix.slice(0, -1)} {`, ...body(service), '}');
    }
  }
  return out.join('\n');
}
