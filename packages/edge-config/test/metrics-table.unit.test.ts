// The metrics table's scanner: a prom-client declaration is found with its type and help text
// (quoted either way, joined by +), the `{ name, help }` objects a helper turns into metrics too,
// and nothing else that happens to have a `name`.
import { renderMetrics, scanMetrics } from '../src';

const source = `
const a = new prom.Counter({
  name: 'sett_things_total',
  help: 'Things, ' + "by kind",
  labelNames: ['kind'],
});
const b = new client.Histogram<'x'>({ name: 'sett_wait_seconds', help: "Time it's waited" });
const flag = { name: 'not_a_metric', description: 'x' };
const gauge = (spec: { name: string; help: string }) => new prom.Gauge({ name, help, labelNames: [] });
gauge({ name: 'sett_queued', help: 'Queued now' });
`;

it('finds declarations with their type and help, and only those', () => {
  expect(scanMetrics('x.ts', source)).toEqual([
    { type: 'counter', name: 'sett_things_total', help: 'Things, by kind', file: 'x.ts' },
    { type: 'histogram', name: 'sett_wait_seconds', help: "Time it's waited", file: 'x.ts' },
    { type: 'gauge', name: 'sett_queued', help: 'Queued now', file: 'x.ts' },
  ]);
});

it('renders them sorted by name', () => {
  const text = renderMetrics(scanMetrics('x.ts', source));
  const names = [...text.matchAll(/^\| `([a-z_]+)`/gm)].map((m) => m[1]);
  expect(names).toEqual(['sett_queued', 'sett_things_total', 'sett_wait_seconds']);
});
