// One capture request, the hot path, in order: read the body (@sett/http's reader: 413 above
// the wire limit), decode it, unpack and type-check it, check and resolve the api key, refuse
// events nested past MAX_JSON_DEPTH (before anything recursive touches them), turn events into
// messages (dropping the nameless and id-less ones), route them, produce with one send per
// topic, and answer 200 only when Kafka acknowledged every message. Every capture path in the
// route table (routes.ts) calls it with the request's node:http objects.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AuthenticationError,
  clientIp,
  closesConnection,
  decodeBody,
  readBody,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
  type ClientIpOptions,
  type DecompressionBudget,
} from '@sett/http';
import { exceedsDepth, MAX_JSON_DEPTH } from '@sett/schemas';
import { encodeCaptureMessage, ProduceError, type ProducerMessage } from '@sett/kafka';
import type { Logger } from '@sett/logger';
import type { TokenResolver, ProjectRef } from '@sett/cache';
import {
  checkTokenShape,
  INVALID_API_KEY_DETAIL,
  unpackBody,
  type UnpackedBody,
} from '../events/unpack-body';
import { parseSentAt, toMessage, type RequestContext } from '../events/to-message';
import { routeMessage } from '../routing/route-events';
import type { KeyLimiter } from '../routing/token-bucket';
import type { CaptureMetrics } from './capture-metrics';

export type CaptureProducer = { send(topic: string, messages: ProducerMessage[]): Promise<void> };

export type CaptureRouteDeps = {
  maxBodyBytes: number;
  maxInflateRatio: number;
  /** The process' budget of decompressed bytes in flight (shared by every request). */
  decompressionBudget?: DecompressionBudget;
  /** Largest message (value and key) accepted; bigger events are refused or dropped (Kafka's message.max.bytes). */
  maxEventBytes: number;
  tokenResolver: TokenResolver;
  producer: CaptureProducer;
  /** null: spike routing to the overflow topic is off. */
  limiter: KeyLimiter | null;
  metrics: CaptureMetrics;
  logger: Logger;
  /** How the client address ($ip) is read; default: the socket's peer (no trusted proxies). */
  clientIp?: ClientIpOptions;
};

/** Handles one POST to a capture path: writes the 200, or throws a SettError for the caller to
 * send. `engage`: the legacy /engage/ body (`{$token, $distinct_id, $set}`) is accepted too. */
export type CaptureHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  opts: { engage: boolean },
) => Promise<void>;

const OK_BODY = Buffer.from(JSON.stringify({ status: 1 }));
/** What Express's res.json sends as Content-Type. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export function createCaptureHandler(deps: CaptureRouteDeps): CaptureHandler {
  const resolveProject = async (token: string): Promise<ProjectRef> => {
    let project: ProjectRef | null;
    try {
      project = await deps.tokenResolver.resolve(token);
    } catch (error) {
      deps.logger.warn('api key lookup failed', { error: (error as Error).message });
      throw new ServiceUnavailableError('Could not check the api key, retry later.');
    }
    if (!project) throw new AuthenticationError(INVALID_API_KEY_DETAIL, 'invalid_api_key');
    return project;
  };

  // The whole request: its cost is one local token check (a Redis or Postgres round trip on a
  // cache miss) and one produce round trip per topic, nothing else.
  return async (req, res, { engage }) => {
    const nowMs = Date.now();
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const query = q === -1 ? null : new URLSearchParams(url.slice(q + 1));

    // 1. Body: wire limit, then decoding with an inflation cap.
    const value = await decodeBody(
      {
        raw: await readCaptureBody(req, res, deps.maxBodyBytes),
        contentType: req.headers['content-type'],
        contentEncoding: req.headers['content-encoding'],
        compression: query?.get('compression') ?? undefined,
      },
      {
        maxInflatedBytes: deps.maxBodyBytes * deps.maxInflateRatio,
        budget: deps.decompressionBudget,
        // The parsed body lives until the answer is sent (messages are built from it).
        heldUntil: res,
      },
    );

    // 2. Shape, api key.
    const body = unpackBody(value, { engage });
    const token = checkTokenShape(body.token);
    await resolveProject(token);

    // 3. Events -> messages -> topics.
    const ctx: RequestContext = {
      token,
      ip: clientIp(req.headers, req.socket.remoteAddress, deps.clientIp) ?? null,
      now: new Date(nowMs).toISOString(),
      nowMs,
      sentAt: parseSentAt(query?.get('_') ?? undefined, body.sentAt),
      historical: body.historical,
    };
    const batch = toTopicMessages(body, ctx, deps);

    // 4. Produce; 200 only once Kafka acknowledged every message.
    await produce(batch, deps);
    res.statusCode = 200;
    res.setHeader('Content-Type', JSON_CONTENT_TYPE);
    res.setHeader('Content-Length', OK_BODY.length);
    res.end(OK_BODY);
  };
}

async function readCaptureBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer> {
  try {
    return await readBody(req, limit);
  } catch (error) {
    // The rest of the body is unread: Node must not drain it for keep-alive.
    if (closesConnection(error)) res.setHeader('Connection', 'close');
    throw error;
  }
}

type TopicMessages = { byTopic: Map<string, ProducerMessage[]>; count: number };

/**
 * Each event checked (depth, name and id, size) and routed. A dropped event is counted and
 * skipped, except in a single-event body, where it is the client's error. Values go to the
 * producer as Buffers: their length is their size, and Kafka's encoder copies them instead of
 * measuring and re-encoding strings.
 */
function toTopicMessages(
  body: UnpackedBody,
  ctx: RequestContext,
  deps: Pick<CaptureRouteDeps, 'metrics' | 'maxEventBytes' | 'limiter'>,
): TopicMessages {
  const byTopic = new Map<string, ProducerMessage[]>();
  let count = 0;
  const keyPrefixBytes = ctx.token.length + 1;
  for (const event of body.events) {
    // Iterative and first: the spreads in toMessage and JSON.stringify below recurse.
    if (exceedsDepth(event, MAX_JSON_DEPTH)) {
      deps.metrics.dropped.inc({ reason: 'too_deep' });
      if (body.single) throw tooDeep(event);
      continue;
    }
    const result = toMessage(event, ctx);
    if (!result.ok) {
      deps.metrics.dropped.inc({ reason: result.reason });
      continue;
    }
    const value = Buffer.from(encodeCaptureMessage(result.message));
    // The key (token:distinct_id) counts toward Kafka's limit too: a huge distinct id must cost
    // only its own event, not the whole request's send.
    const recordBytes = value.length + keyPrefixBytes + Buffer.byteLength(result.message.distinct_id);
    if (recordBytes > deps.maxEventBytes) {
      deps.metrics.dropped.inc({ reason: 'too_large' });
      if (body.single)
        throw new PayloadTooLargeError(`Event is larger than the ${deps.maxEventBytes} byte limit.`);
      continue;
    }
    const routed = routeMessage(result.message, value, deps.limiter);
    let list = byTopic.get(routed.topic);
    if (!list) byTopic.set(routed.topic, (list = []));
    list.push(routed.message);
    count++;
  }
  return { byTopic, count };
}

/** One send per topic, together; resolves once every one was acknowledged. */
async function produce(
  { byTopic, count }: TopicMessages,
  deps: Pick<CaptureRouteDeps, 'metrics' | 'producer' | 'logger'>,
): Promise<void> {
  if (count === 0) return;
  const stop = deps.metrics.produceSeconds.startTimer();
  try {
    if (byTopic.size === 1) {
      const [[topic, messages]] = byTopic as unknown as [[string, ProducerMessage[]]];
      await deps.producer.send(topic, messages);
    } else {
      await Promise.all([...byTopic].map(([topic, messages]) => deps.producer.send(topic, messages)));
    }
    stop({ outcome: 'ok' });
  } catch (error) {
    stop({ outcome: 'error' });
    if (error instanceof ProduceError && error.code === 'too_large')
      throw new PayloadTooLargeError(error.message);
    deps.logger.warn('events not acknowledged by kafka', { events: count, error: (error as Error).message });
    throw new ServiceUnavailableError('Events could not be stored, retry later.');
  }
  for (const [topic, messages] of byTopic) deps.metrics.accepted.inc({ topic }, messages.length);
}

/** The 400 for a single over-deep event; attr names the top-level field that nests too deep. */
function tooDeep(event: Record<string, unknown>): ValidationError {
  const attr = Object.keys(event).find((k) => exceedsDepth(event[k], MAX_JSON_DEPTH - 1)) ?? null;
  return new ValidationError(
    `Event nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays.`,
    attr,
    'too_deep',
  );
}
