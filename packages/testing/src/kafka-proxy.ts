// A proxy in front of plaintext Kafka brokers (the dev broker) that adds what the dev broker lacks:
// TLS termination and SASL authentication (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). Tests point Sett's
// Kafka clients at it with their production settings.
//
// Kafka clients connect to the bootstrap address only once: after that they connect to the
// host:port each broker advertises in Metadata (and FindCoordinator) responses, which for the dev
// broker are its own plaintext ports. So a plain byte pipe is not enough. This proxy listens once
// per upstream broker and rewrites the broker addresses in those two responses to its own
// listeners, the way Kafka-aware proxies do, so every connection the client makes goes through it.
//
// With SASL on, the proxy plays the broker's part of the handshake itself: it adds SaslHandshake
// and SaslAuthenticate to the ApiVersions answer, answers both requests, and closes a connection
// that sends anything else before it authenticated (as Kafka does). Everything else passes
// through byte for byte.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';

export type KafkaProxySaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

export type KafkaProxyOptions = {
  /** Upstream plaintext brokers, host:port, as the upstream advertises them. */
  brokers: string[];
  /** TLS on the proxy's listeners; without it they are plaintext. */
  tls?: {
    /** The server's certificate chain and key (PEM). */
    cert: string;
    key: string;
    /** CAs for client certificates; with `requireClientCert` the proxy demands one. */
    clientCa?: string;
    requireClientCert?: boolean;
  };
  /** SASL the clients must pass before anything reaches the broker. */
  sasl?: { mechanisms: KafkaProxySaslMechanism[]; users: Record<string, string> };
  /** Host the rewritten responses advertise (default 127.0.0.1, where the proxy listens). */
  advertisedHost?: string;
};

export type KafkaProxy = {
  /** The proxy's listeners as host:port, one per upstream broker: give these to the client. */
  brokers: string[];
  /** Server names (SNI) TLS clients sent, in connection order (undefined when none was sent). */
  servernames(): Array<string | undefined>;
  /** Connections accepted (after the TLS handshake, with TLS). */
  connections(): number;
  /** TLS handshakes that failed, with the server-side reason. */
  handshakeErrors(): string[];
  /** SASL logins that succeeded and failed, as "<mechanism> <user>". */
  logins(): { ok: string[]; failed: string[] };
  close(): Promise<void>;
};

const API_METADATA = 3;
const API_FIND_COORDINATOR = 10;
const API_SASL_HANDSHAKE = 17;
const API_API_VERSIONS = 18;
const API_SASL_AUTHENTICATE = 36;
const UNSUPPORTED_SASL_MECHANISM = 33;
const ILLEGAL_SASL_STATE = 34;
const SASL_AUTHENTICATION_FAILED = 58;

type Address = { host: string; port: number };

/** Splits a byte stream into Kafka frames (int32 size prefix included). */
function frameReader(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const size = pending.readInt32BE(0);
      if (pending.length < 4 + size) break;
      onFrame(pending.subarray(0, 4 + size));
      pending = pending.subarray(4 + size);
    }
  };
}

const int16 = (value: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(value);
  return b;
};
const int32 = (value: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
};
const kafkaString = (value: string | null) => {
  if (value === null) return int16(-1);
  const bytes = Buffer.from(value, 'utf8');
  return Buffer.concat([int16(bytes.length), bytes]);
};
const kafkaBytes = (value: Buffer) => Buffer.concat([int32(value.length), value]);
const withSize = (body: Buffer[]) => {
  const payload = Buffer.concat(body);
  return Buffer.concat([int32(payload.length), payload]);
};

/** Reads host (string) and port (int32) at `offset`; returns them and the offset after. */
function readHostPort(frame: Buffer, offset: number): Address & { end: number } {
  const hostLength = frame.readInt16BE(offset);
  const host = frame.toString('utf8', offset + 2, offset + 2 + hostLength);
  const port = frame.readInt32BE(offset + 2 + hostLength);
  return { host, port, end: offset + 2 + hostLength + 4 };
}

/**
 * Metadata responses v0-v8 (kafkajs 2.x speaks v0-v6): the brokers array, each
 * node_id, host, port and (v1+) rack, after the throttle time of v3+.
 */
function rewriteMetadata(frame: Buffer, version: number, map: (a: Address) => Address): Buffer {
  if (version > 8) throw new Error(`Metadata v${version} (flexible) is not supported by the test proxy`);
  let offset = 8 + (version >= 3 ? 4 : 0);
  const head = frame.subarray(4, offset);
  const count = frame.readInt32BE(offset);
  offset += 4;
  const brokers: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const nodeId = frame.subarray(offset, offset + 4);
    const found = readHostPort(frame, offset + 4);
    offset = found.end;
    let rack: Buffer = Buffer.alloc(0);
    if (version >= 1) {
      const rackLength = frame.readInt16BE(offset);
      const end = offset + 2 + Math.max(rackLength, 0);
      rack = frame.subarray(offset, end);
      offset = end;
    }
    const to = map(found);
    brokers.push(nodeId, kafkaString(to.host), int32(to.port), rack);
  }
  return withSize([head, int32(count), ...brokers, frame.subarray(offset)]);
}

/** FindCoordinator responses v0-v2: (v1+ throttle), error code, (v1+ message), node_id, host, port. */
function rewriteFindCoordinator(frame: Buffer, version: number, map: (a: Address) => Address): Buffer {
  if (version > 2) throw new Error(`FindCoordinator v${version} is not supported by the test proxy`);
  let offset = 8;
  if (version >= 1) {
    offset += 4 + 2;
    const messageLength = frame.readInt16BE(offset);
    offset += 2 + Math.max(messageLength, 0);
  } else {
    offset += 2;
  }
  offset += 4; // node_id
  const found = readHostPort(frame, offset);
  const to = map(found);
  return withSize([
    frame.subarray(4, offset),
    kafkaString(to.host),
    int32(to.port),
    frame.subarray(found.end),
  ]);
}

/** ApiVersions responses v0-v2: error code, [api_key, min, max], (v1+) throttle. Adds SASL's APIs. */
function addSaslApis(frame: Buffer): Buffer {
  if (frame.readInt16BE(8) !== 0) return frame; // an error answer (unsupported version): leave it
  const count = frame.readInt32BE(10);
  const listEnd = 14 + count * 6;
  const present = new Set<number>();
  for (let i = 0; i < count; i++) present.add(frame.readInt16BE(14 + i * 6));
  const added = [API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE]
    .filter((key) => !present.has(key))
    .map((key) => Buffer.concat([int16(key), int16(0), int16(1)]));
  return withSize([
    frame.subarray(4, 10),
    int32(count + added.length),
    frame.subarray(14, listEnd),
    ...added,
    frame.subarray(listEnd),
  ]);
}

type SaslStep = { done: boolean; response: Buffer; user: string } | { error: string; user: string };

/** The server side of one SASL exchange (RFC 4616 PLAIN, RFC 5802 SCRAM). */
function saslServer(
  mechanism: KafkaProxySaslMechanism,
  users: Record<string, string>,
): (bytes: Buffer) => SaslStep {
  const failed = (user: string) => ({
    error: `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`,
    user,
  });
  if (mechanism === 'PLAIN') {
    return (bytes) => {
      const [, user = '', password = ''] = bytes.toString('utf8').split('\0');
      const expected = users[user];
      return expected !== undefined && expected === password
        ? { done: true, response: Buffer.alloc(0), user }
        : failed(user);
    };
  }

  const digest = mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512';
  const keyLength = mechanism === 'SCRAM-SHA-256' ? 32 : 64;
  const hmac = (key: Buffer, text: string) => createHmac(digest, key).update(text).digest();
  const attributes = (text: string) =>
    Object.fromEntries(text.split(',').map((part) => [part.slice(0, 1), part.slice(2)] as const));
  let first: { user: string; bare: string; server: string; nonce: string; salted: Buffer } | undefined;

  return (bytes) => {
    const message = bytes.toString('utf8');
    if (first === undefined) {
      if (!message.startsWith('n,,')) return { error: 'SCRAM: channel binding is not supported', user: '' };
      const bare = message.slice(3);
      const { n = '', r = '' } = attributes(bare);
      const user = n.replace(/=2C/g, ',').replace(/=3D/g, '=');
      const password = users[user];
      if (password === undefined) return failed(user);
      const salt = randomBytes(16);
      const iterations = 4096;
      const nonce = r + randomBytes(18).toString('base64');
      const server = `r=${nonce},s=${salt.toString('base64')},i=${iterations}`;
      first = {
        user,
        bare,
        server,
        nonce,
        salted: pbkdf2Sync(password, salt, iterations, keyLength, digest),
      };
      return { done: false, response: Buffer.from(server), user };
    }
    const proofAt = message.lastIndexOf(',p=');
    const withoutProof = message.slice(0, proofAt);
    const { r, c } = attributes(withoutProof);
    if (proofAt < 0 || r !== first.nonce || c !== 'biws') return failed(first.user);
    const authMessage = `${first.bare},${first.server},${withoutProof}`;
    const clientKey = hmac(first.salted, 'Client Key');
    const storedKey = createHash(digest).update(clientKey).digest();
    const signature = hmac(storedKey, authMessage);
    const proof = Buffer.from(message.slice(proofAt + 3), 'base64');
    if (proof.length !== signature.length) return failed(first.user);
    const recovered = Buffer.from(proof.map((b, i) => b ^ signature[i]!));
    if (!timingSafeEqual(createHash(digest).update(recovered).digest(), storedKey)) return failed(first.user);
    const serverSignature = hmac(hmac(first.salted, 'Server Key'), authMessage);
    return { done: true, response: Buffer.from(`v=${serverSignature.toString('base64')}`), user: first.user };
  };
}

/** Offset of a non-flexible request's body: after api key, version, correlation id, client id. */
function requestBodyOffset(frame: Buffer): number {
  const clientIdLength = frame.readInt16BE(12);
  return 14 + Math.max(clientIdLength, 0);
}

export async function startKafkaProxy(options: KafkaProxyOptions): Promise<KafkaProxy> {
  const advertisedHost = options.advertisedHost ?? '127.0.0.1';
  const servernames: Array<string | undefined> = [];
  const handshakeErrors: string[] = [];
  const logins = { ok: [] as string[], failed: [] as string[] };
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const servers: net.Server[] = [];
  /** upstream "host:port" -> the proxy port that fronts it */
  const front = new Map<string, number>();
  const sasl = options.sasl;

  const map = (a: Address): Address => {
    const port = front.get(`${a.host}:${a.port}`);
    return port === undefined ? a : { host: advertisedHost, port };
  };
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  };

  const serve = (upstreamAddress: Address) => (client: net.Socket) => {
    connections++;
    if (client instanceof tls.TLSSocket) {
      servernames.push((client as tls.TLSSocket & { servername?: string | false }).servername || undefined);
    }
    track(client);
    const upstream = net.connect(upstreamAddress.port, upstreamAddress.host);
    track(upstream);
    // correlation id -> [api key, api version] of requests whose responses the proxy rewrites
    const inFlight = new Map<number, [number, number]>();
    let authenticated = sasl === undefined;
    let exchange: ((bytes: Buffer) => SaslStep) | undefined;
    let mechanismName = '';

    const answer = (correlationId: number, body: Buffer[]) =>
      client.write(withSize([int32(correlationId), ...body]));

    /** Plays the broker's part of SaslHandshake and SaslAuthenticate; false means hang up. */
    const handleSasl = (frame: Buffer, apiKey: number, version: number, correlationId: number): boolean => {
      const body = requestBodyOffset(frame);
      if (apiKey === API_SASL_HANDSHAKE) {
        const length = frame.readInt16BE(body);
        const asked = frame.toString('utf8', body + 2, body + 2 + length);
        const offered = sasl!.mechanisms;
        const supported = (offered as string[]).includes(asked);
        if (supported) {
          mechanismName = asked;
          exchange = saslServer(asked as KafkaProxySaslMechanism, sasl!.users);
        }
        answer(correlationId, [
          int16(supported ? 0 : UNSUPPORTED_SASL_MECHANISM),
          int32(offered.length),
          ...offered.map(kafkaString),
        ]);
        return true;
      }
      if (apiKey === API_SASL_AUTHENTICATE && exchange !== undefined) {
        const length = frame.readInt32BE(body);
        const step = exchange(frame.subarray(body + 4, body + 4 + length));
        const lifetime = version >= 1 ? [Buffer.alloc(8)] : [];
        if ('error' in step) {
          logins.failed.push(`${mechanismName} ${step.user}`);
          answer(correlationId, [
            int16(SASL_AUTHENTICATION_FAILED),
            kafkaString(step.error),
            kafkaBytes(Buffer.alloc(0)),
            ...lifetime,
          ]);
          return true;
        }
        if (step.done) {
          authenticated = true;
          logins.ok.push(`${mechanismName} ${step.user}`);
        }
        answer(correlationId, [int16(0), kafkaString(null), kafkaBytes(step.response), ...lifetime]);
        return true;
      }
      answer(correlationId, [int16(ILLEGAL_SASL_STATE)]);
      return false;
    };

    client.on(
      'data',
      frameReader((frame) => {
        const apiKey = frame.readInt16BE(4);
        const version = frame.readInt16BE(6);
        const correlationId = frame.readInt32BE(8);
        if (sasl !== undefined && (apiKey === API_SASL_HANDSHAKE || apiKey === API_SASL_AUTHENTICATE)) {
          if (!handleSasl(frame, apiKey, version, correlationId)) client.end();
          return;
        }
        if (!authenticated && apiKey !== API_API_VERSIONS) {
          client.destroy(); // Kafka closes a connection that skips authentication
          return;
        }
        if (
          apiKey === API_METADATA ||
          apiKey === API_FIND_COORDINATOR ||
          (apiKey === API_API_VERSIONS && sasl !== undefined && version <= 2)
        ) {
          inFlight.set(correlationId, [apiKey, version]);
        }
        upstream.write(frame);
      }),
    );
    upstream.on(
      'data',
      frameReader((frame) => {
        const correlationId = frame.readInt32BE(4);
        const request = inFlight.get(correlationId);
        if (request === undefined) return void client.write(frame);
        inFlight.delete(correlationId);
        const [apiKey, version] = request;
        try {
          if (apiKey === API_METADATA) client.write(rewriteMetadata(frame, version, map));
          else if (apiKey === API_FIND_COORDINATOR) client.write(rewriteFindCoordinator(frame, version, map));
          else client.write(addSaslApis(frame));
        } catch {
          client.destroy();
        }
      }),
    );
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  };

  for (const broker of options.brokers) {
    const colon = broker.lastIndexOf(':');
    const upstreamAddress = { host: broker.slice(0, colon), port: Number(broker.slice(colon + 1)) };
    let server: net.Server;
    if (options.tls) {
      const t = options.tls;
      const tlsServer = tls.createServer(
        {
          cert: t.cert,
          key: t.key,
          ...(t.clientCa === undefined ? {} : { ca: t.clientCa }),
          requestCert: t.requireClientCert === true,
          rejectUnauthorized: t.requireClientCert === true,
        },
        serve(upstreamAddress),
      );
      tlsServer.on('tlsClientError', (error) => handshakeErrors.push(error.message));
      tlsServer.on('connection', track);
      server = tlsServer;
    } else {
      server = net.createServer(serve(upstreamAddress));
    }
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
    servers.push(server);
    front.set(broker, port);
  }

  return {
    brokers: options.brokers.map((b) => `${advertisedHost}:${front.get(b)}`),
    servernames: () => [...servernames],
    connections: () => connections,
    handshakeErrors: () => [...handshakeErrors],
    logins: () => ({ ok: [...logins.ok], failed: [...logins.failed] }),
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
    },
  };
}
