// sett_build_info: every registry from the shared factory carries it, with the service label
// and the workspace version, and a cluster primary summing its workers still reports 1.
import { AggregatorRegistry } from 'prom-client';
import { createMetricsRegistry, settVersion } from '../src';

const rootVersion = (require('../../../package.json') as { version: string }).version;

it('reads the version from the workspace root package.json', () => {
  expect(settVersion()).toBe(rootVersion);
});

it('is a gauge fixed at 1 labelled with service, version and Node.js version', async () => {
  const text = await createMetricsRegistry('capture').metrics();
  expect(text).toContain('# TYPE sett_build_info gauge');
  const line = text.split('\n').find((l) => l.startsWith('sett_build_info{'));
  expect(line).toBeDefined();
  expect(line).toContain(`version="${rootVersion}"`);
  expect(line).toContain(`node_version="${process.version}"`);
  expect(line).toContain('service="capture"');
  expect(line!.endsWith(' 1')).toBe(true);
});

it('takes an explicit version (an image build can stamp its own)', async () => {
  const text = await createMetricsRegistry('decide', { version: '9.9.9-test' }).metrics();
  expect(text).toMatch(/sett_build_info\{[^}]*version="9\.9\.9-test"[^}]*\} 1/);
});

it('stays 1 when a cluster primary aggregates three workers', async () => {
  const workers = await Promise.all([1, 2, 3].map(() => createMetricsRegistry('decide').getMetricsAsJSON()));
  const text = await AggregatorRegistry.aggregate(workers).metrics();
  expect(text).toMatch(/^sett_build_info\{[^}]*\} 1$/m);
});
