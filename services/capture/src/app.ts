// Builds the capture HTTP app from its dependencies, so tests run the real thing in-process
// (port 0, real Redis, Postgres and broker) and main.ts only wires clients and starts it.
import { createDecompressionBudget, createRouteApp, type RouteApp } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Config } from '@sett/config';
import type { TokenResolver } from '@sett/cache';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { BatchingProducer } from '@sett/kafka';
import { createCaptureHandler, type CaptureProducer } from './capture/capture-handler';
import { createCaptureMetrics } from './capture/capture-metrics';
import { createKeyLimiter } from './routing/token-bucket';
import { captureRoutes } from './routes';

export type CaptureAppDeps = {
  config: {
    capture: Config['capture'];
    kafka: Pick<Config['kafka'], 'messageMaxBytes'>;
    /** Absent: 0 (X-Forwarded-For ignored: the socket's peer is the client). */
    trustedProxyHops?: number;
    /** ACCESS_LOG_SAMPLE_RATE; absent: no access log. */
    http?: Pick<Config['http'], 'accessLogSampleRate'>;
    /** DECOMPRESSION_BUDGET_BYTES; absent: decompressed bodies are not budgeted. */
    decompressionBudgetBytes?: number;
  };
  logger: Logger;
  redis: Pick<Redis, 'ping'>;
  tokenResolver: TokenResolver;
  /** checkReady: recent produce outcomes, else a bounded metadata probe (@sett/kafka). */
  producer: CaptureProducer & Pick<BatchingProducer, 'checkReady'>;
  registry: Registry;
  /** Clock for the spike limiter (tests). */
  now?: () => number;
};

/** Headroom under Kafka's message.max.bytes for the key and record overhead. */
const RECORD_HEADROOM_BYTES = 1024;

export function createCaptureApp(deps: CaptureAppDeps): RouteApp {
  const { capture } = deps.config;
  const limiter = capture.overflowEnabled
    ? createKeyLimiter({
        ratePerSecond: capture.overflowRatePerSecond,
        burst: capture.overflowBurst,
        now: deps.now,
      })
    : null;
  const handler = createCaptureHandler({
    maxBodyBytes: capture.maxBodyBytes,
    maxInflateRatio: capture.maxInflateRatio,
    decompressionBudget:
      deps.config.decompressionBudgetBytes === undefined
        ? undefined
        : createDecompressionBudget(deps.config.decompressionBudgetBytes),
    maxEventBytes: deps.config.kafka.messageMaxBytes - RECORD_HEADROOM_BYTES,
    clientIp: { trustedProxyHops: deps.config.trustedProxyHops ?? 0 },
    tokenResolver: deps.tokenResolver,
    producer: deps.producer,
    limiter,
    metrics: createCaptureMetrics(deps.registry),
    logger: deps.logger,
  });
  return createRouteApp({
    name: 'capture',
    logger: deps.logger,
    registry: deps.registry,
    table: captureRoutes,
    deps: { capture: handler },
    // PostHog's capture answers preflights with 200 (decide with 204); SDKs accept either.
    preflightStatus: 200,
    accessLogSampleRate: deps.config.http?.accessLogSampleRate,
    readiness: {
      // Not ready while produce requests fail or the broker does not answer, so a load balancer
      // stops sending events this instance can only answer 503 to; ready again by itself.
      kafka: () => deps.producer.checkReady(),
      redis: async () => void (await deps.redis.ping()),
    },
  });
}
