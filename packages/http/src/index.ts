export {
  SettError,
  ValidationError,
  AuthenticationError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  ConflictError,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  TimeoutError,
  UriTooLongError,
} from './errors';
export type { ErrorBody, ErrorType } from './errors';
export { toSettError } from './error-middleware';
export {
  createMetricsRegistry,
  httpRequestObserver,
  methodLabel,
  prom,
  UNMATCHED_ROUTE,
  settVersion,
} from './metrics';
export type { BuildInfo, HttpRequestObserver } from './metrics';
export { startService } from './service';
export { DEFAULT_SERVER_TIMEOUTS, serverTimeouts } from './service';
export type { StartOptions, RunningService, ReadinessCheck, ServerTimeouts } from './service';
export {
  resolveWorkers,
  notifyWorkerReady,
  runClusterPrimary,
  clusterMetrics,
  shareMetricsWithPrimary,
} from './cluster';
export { decodeBody } from './body-decoding';
export type { EncodedBody, DecodeLimits } from './body-decoding';
export { createDecompressionBudget, SMALL_BODY_BYTES } from './decompression-budget';
export type { DecompressionBudget } from './decompression-budget';
export { publicCorsHeaders } from './cors';
export { bearerToken } from './bearer';
export { clientIp, normaliseIp } from './client-ip';
export type { ClientIpOptions } from './client-ip';
export { readBody, BodyTooLargeError, closesConnection, lingerOnUnreadBody } from './read-body';
export { requestIdOf, withRequestId, REQUEST_ID_HEADER } from './request-id';
export { createRouteApp, isUpload, keyPrefixOf, maskKey } from './routes/route-app';
export type { RouteApp, RouteAppOptions, Authenticator } from './routes/route-app';
export { route, SerializedJson } from './routes/route-types';
export type {
  AnyRoute,
  AuthKind,
  BodyMode,
  Compatibility,
  HttpMethod,
  RouteAuth,
  RouteContext,
  RouteDeclaration,
  RouteDef,
  RouteSchemas,
  RouteTable,
} from './routes/route-types';
export { buildOpenApi, openApiPath } from './routes/openapi';
export type { OpenApiOptions } from './routes/openapi';
export {
  deriveEdgeRouting,
  edgeMatcher,
  edgeProbes,
  matchEdgeRoute,
  RouteConflictError,
  DEFAULT_EDGE_FALLBACK,
} from './routes/proxy-table';
export type {
  EdgeProbe,
  EdgeRoute,
  EdgeRouting,
  EdgeRoutingOptions,
  EdgeService,
} from './routes/proxy-table';
