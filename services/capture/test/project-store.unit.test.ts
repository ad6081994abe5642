// The token loader's own deadline: a query that never settles (Postgres stalled mid-query, or a
// pool waiting for a connection) still fails in bounded time; a prompt answer passes through.
import { createProjectLoader, ProjectLookupTimeoutError } from '../src/capture/project-store';

it('rejects a lookup that never settles once its deadline passes', async () => {
  const never = { query: () => new Promise<never>(() => undefined) };
  const load = createProjectLoader(never, { timeoutMs: 50 });
  const started = Date.now();
  await expect(load('phc_x')).rejects.toBeInstanceOf(ProjectLookupTimeoutError);
  expect(Date.now() - started).toBeLessThan(1000);
});

it('returns a prompt answer, found or not', async () => {
  const db = {
    query: async (_text: string, values: unknown[]) => ({
      rows: values[0] === 'phc_known' ? [{ id: 7, organization_id: 'org' }] : [],
    }),
  };
  const load = createProjectLoader(db as never, { timeoutMs: 1000 });
  await expect(load('phc_known')).resolves.toEqual({ teamId: 7, organizationId: 'org' });
  await expect(load('phc_unknown')).resolves.toBeNull();
});
