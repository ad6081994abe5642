// The dev edge alone in a process of its own, for tests that count its sockets and file
// descriptors: `SETT_TEST_EDGE='{"upstream":<port>,"headersMs":<ms>}' node --import tsx edge-process.ts`.
// Prints `edge ready <port>`; stops on SIGTERM.
import { startEdge } from '../../src/edge';

const { upstream, headersMs } = JSON.parse(process.env.SETT_TEST_EDGE ?? '{}') as {
  upstream: number;
  headersMs?: number;
};
const up = { host: '127.0.0.1', port: upstream };
void startEdge({
  host: '127.0.0.1',
  port: 0,
  upstreams: { capture: up, decide: up, management: up },
  timeouts: headersMs ? { headersMs } : {},
}).then((edge) => {
  process.stdout.write(`edge ready ${edge.port}\n`);
  process.once('SIGTERM', () => void edge.stop().then(() => process.exit(0)));
});
