// What the proxies need beyond the routing itself: where each service listens in each
// deployment, how large a body the edge lets through to it, and the socket deadlines. Built by
// `pnpm routes` (scripts/routes.ts) from the services' configuration defaults (@sett/config)
// and their route tables, so the proxies carry the same limits as the services behind them.
import type { EdgeService } from '@sett/http';

export interface EdgeServiceSettings {
  /** host:port of the service in docker-compose.yml (nginx and Caddy). */
  composeAddress: string;
  /** Kubernetes Service name and port (deploy/k8s). */
  k8sService: { name: string; port: number };
  /** The Ingress object its paths go in (body limits are per Ingress in ingress-nginx). */
  ingress: string;
  /** The largest body the edge passes on (bytes): the service's own limit, so that the service
   * answers its own 413 for anything between and the edge only stops what no route takes. */
  maxBodyBytes: number;
  /** Bodies stream to the service as they arrive (capture), instead of being read first. */
  streamBodies: boolean;
}

/** Socket deadlines, in milliseconds: the services' HTTP_* settings at their defaults. */
export interface EdgeTimeouts {
  /** HTTP_HEADERS_TIMEOUT_MS: the request head must arrive within this. */
  headersMs: number;
  /** HTTP_REQUEST_TIMEOUT_MS: the whole request must arrive within this; also how long the edge
   * waits on a service's answer. */
  requestMs: number;
  /** HTTP_KEEP_ALIVE_TIMEOUT_MS: an idle client connection is closed after this. */
  keepAliveMs: number;
  /** Opening a connection to a service. */
  connectMs: number;
  /** After an early answer (a 413 from the head alone), how long the rest of the body is read
   * and dropped, so that the client can read the answer instead of a reset connection. */
  lingerMs: number;
}

export interface EdgeSettings {
  services: Record<EdgeService, EdgeServiceSettings>;
  timeouts: EdgeTimeouts;
}

/** `20971520` -> `20m` when it is a whole number of MiB (nginx and ingress-nginx sizes), else
 * the byte count. */
export function nginxSize(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes % MiB === 0) return `${bytes / MiB}m`;
  if (bytes % 1024 === 0) return `${bytes / 1024}k`;
  return String(bytes);
}

/** Seconds for nginx, rounded up (nginx takes whole seconds or ms; seconds read better). */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
