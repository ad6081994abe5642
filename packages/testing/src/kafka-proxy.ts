// A TLS-terminating proxy in front of plaintext Kafka brokers (the dev broker), for testing Sett's
// Kafka clients over TLS with their production settings.
//
// Kafka clients connect to the bootstrap address only once: after that they connect to the
// host:port each broker advertises in Metadata (and FindCoordinator) responses, which for the dev
// broker are its own plaintext ports. So a plain byte pipe is not enough. This proxy listens with
// TLS once per upstream broker and rewrites the broker addresses in those two responses to its
// own listeners, the way Kafka-aware proxies do, so every connection the client makes goes
// through TLS. Everything else passes through byte for byte.
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';

export type KafkaTlsProxyOptions = {
  /** Upstream plaintext brokers, host:port, as the upstream advertises them. */
  brokers: string[];
  /** The server's certificate chain and key (PEM). */
  cert: string;
  key: string;
  /** CAs for client certificates; with `requireClientCert` the proxy demands one. */
  clientCa?: string;
  requireClientCert?: boolean;
  /** Host the rewritten responses advertise (default 127.0.0.1, where the proxy listens). */
  advertisedHost?: string;
};

export type KafkaTlsProxy = {
  /** The proxy's listeners as host:port, one per upstream broker: give these to the client. */
  brokers: string[];
  /** Server names (SNI) clients sent, in connection order (undefined when none was sent). */
  servernames(): Array<string | undefined>;
  /** TLS connections that completed their handshake. */
  secureConnections(): number;
  /** Handshakes that failed, with the server-side reason. */
  handshakeErrors(): string[];
  close(): Promise<void>;
};

const API_METADATA = 3;
const API_FIND_COORDINATOR = 10;

type Address = { host: string; port: number };

/** Splits a byte stream into Kafka frames (int32 size prefix included). */
function frameReader(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
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

function kafkaString(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  const length = Buffer.alloc(2);
  length.writeInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function int32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
}

function withSize(body: Buffer[]): Buffer {
  const payload = Buffer.concat(body);
  return Buffer.concat([int32(payload.length), payload]);
}

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
    let rack = Buffer.alloc(0);
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

export async function startKafkaTlsProxy(options: KafkaTlsProxyOptions): Promise<KafkaTlsProxy> {
  const advertisedHost = options.advertisedHost ?? '127.0.0.1';
  const servernames: Array<string | undefined> = [];
  const handshakeErrors: string[] = [];
  let secure = 0;
  const sockets = new Set<net.Socket>();
  const servers: tls.Server[] = [];
  /** upstream "host:port" -> the proxy port that fronts it */
  const front = new Map<string, number>();

  const map = (a: Address): Address => {
    const port = front.get(`${a.host}:${a.port}`);
    return port === undefined ? a : { host: advertisedHost, port };
  };
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  };

  const serve = (upstreamAddress: Address) => (client: tls.TLSSocket) => {
    secure++;
    servernames.push((client as tls.TLSSocket & { servername?: string | false }).servername || undefined);
    track(client);
    const upstream = net.connect(upstreamAddress.port, upstreamAddress.host);
    track(upstream);
    // correlation id -> [api key, api version] of requests whose responses carry addresses
    const inFlight = new Map<number, [number, number]>();

    client.on(
      'data',
      frameReader((frame) => {
        const apiKey = frame.readInt16BE(4);
        if (apiKey === API_METADATA || apiKey === API_FIND_COORDINATOR) {
          inFlight.set(frame.readInt32BE(8), [apiKey, frame.readInt16BE(6)]);
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
          client.write(
            apiKey === API_METADATA
              ? rewriteMetadata(frame, version, map)
              : rewriteFindCoordinator(frame, version, map),
          );
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
    const server = tls.createServer(
      {
        cert: options.cert,
        key: options.key,
        ...(options.clientCa === undefined ? {} : { ca: options.clientCa }),
        requestCert: options.requireClientCert === true,
        rejectUnauthorized: options.requireClientCert === true,
      },
      serve(upstreamAddress),
    );
    server.on('tlsClientError', (error) => handshakeErrors.push(error.message));
    server.on('connection', track);
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
    secureConnections: () => secure,
    handshakeErrors: () => [...handshakeErrors],
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
    },
  };
}
