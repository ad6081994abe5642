// ioredis client construction with fail-fast settings: a request path must get an error in
// bounded time when Redis is down (and fall back or answer 503), not queue forever.
import Redis, { type RedisOptions } from 'ioredis';

export type { Redis };

export interface RedisClientOptions {
  url: string;
  /** Name shown in CLIENT LIST, e.g. the service name. */
  name?: string;
  commandTimeoutMs?: number;
  /** Prepended to every key (not to pub/sub channels); tests use it to isolate themselves. */
  keyPrefix?: string;
  onError?: (err: Error) => void;
}

export function createRedis(opts: RedisClientOptions): Redis {
  const options: RedisOptions = {
    connectionName: opts.name,
    keyPrefix: opts.keyPrefix,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    commandTimeout: opts.commandTimeoutMs ?? 1000,
    connectTimeout: 2000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  const client = new Redis(opts.url, options);
  // Without a listener ioredis prints every reconnect error; the owner decides how to log.
  client.on('error', (err: Error) => opts.onError?.(err));
  return client;
}
