// A TCP proxy for fault tests, on 127.0.0.1: forwards to a target (Postgres, usually) until told
// to fail in one of the two ways a dependency fails in production:
// - silent: connections are accepted and nothing comes back (a hung server, a black-holed
//   network). Existing connections stop forwarding too. Only timeouts notice this.
// - down: the listener closes and every connection is cut (a restart, a refused port).
// Without a target it is silent from the start and can never forward.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export type TcpProxy = {
  /** The port it listens on (the same after `up()`). */
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Stop answering: accepted and held connections forward nothing from now on. */
  silence(): void;
  /** Forward again for new connections; existing ones are cut (those held while silent are dead). */
  forward(): void;
  /** Close the listener and cut every connection. */
  down(): Promise<void>;
  /** Listen again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
};

export async function startTcpProxy(target?: { host: string; port: number }): Promise<TcpProxy> {
  let silent = target === undefined;
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  };
  const cutAll = () => {
    for (const s of sockets) s.destroy();
  };

  const server = net.createServer((client) => {
    accepted++;
    track(client);
    if (silent || !target) return; // accepted, never answered
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    // Not pipe(): a silenced proxy must drop what is already in flight, not buffer it.
    client.on('data', (d) => void (silent || upstream.write(d)));
    upstream.on('data', (d) => void (silent || client.write(d)));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });

  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      cutAll();
    });

  const port = await listen(0);
  return {
    port,
    accepted: () => accepted,
    silence() {
      silent = true;
    },
    forward() {
      silent = target === undefined;
      cutAll();
    },
    down: stop,
    async up() {
      await listen(port);
    },
    close: stop,
  };
}
