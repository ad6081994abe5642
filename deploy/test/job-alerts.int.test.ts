// The background-job alerts (deploy/monitoring/sett-alerts.yaml, group sett-jobs) on real scrapes
// of a running management process: its /_metrics reads the jobs' state from Postgres, which the
// test sets up as an operator would find it after retention stopped and a deletion hung, and
// then healthy again. Timestamps are shifted to promtool's clock (it evaluates from Unix time 0)
// and every value is rounded to whole seconds, so the expected annotation text is exact.
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { createTestDatabase, endPool, type TestDatabase } from '@sett/testing';
import { parseScrape, promtoolPath, promtoolTestRules, seriesFromScrapes, spawnService } from './promtool';

jest.setTimeout(90_000);

let db: TestDatabase;
let pool: pg.Pool;
let child: ChildProcess;
let base: string;

beforeAll(async () => {
  promtoolPath();
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // No runner: the rows below stay as the test writes them.
  ({ base, child } = await spawnService('management', {
    DATABASE_URL: db.url,
    MANAGEMENT_PORT: '0',
    JOBS_ENABLED: 'false',
    RETENTION_INTERVAL_MS: '3600000',
  }));
});

afterAll(async () => {
  child?.kill('SIGKILL');
  if (pool) await endPool(pool);
  await db?.drop();
});

/** One scrape, timestamps made relative to the scrape (promtool's time 0), values rounded. */
async function scrape() {
  const now = Date.now() / 1000;
  const series = parseScrape(await (await fetch(`${base}/_metrics`)).text());
  for (const [name, value] of series)
    series.set(name, Math.round(name.includes('_timestamp_seconds') && value > 0 ? value - now : value));
  return series;
}

/** Prometheus' humanizeDuration for at least an hour and under a day: "3h 0m 1s". */
const humanize = (seconds: number) =>
  `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m ${Math.floor(seconds % 60)}s`;

const alertAt20m = (alertname: string, expAlerts: unknown[]) => ({
  eval_time: '20m',
  alertname,
  exp_alerts: expAlerts,
});

it('retention without a success for two periods and a deletion waiting for hours fire; a healthy queue does not', async () => {
  await pool.query(
    `INSERT INTO background_jobs (kind, state, run_after, started_at, finished_at)
     VALUES ('retention', 'succeeded', now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours'),
            ('person_deletion', 'queued', now() - interval '3 hours', NULL, NULL)`,
  );
  const stale = await scrape();
  // A loaded machine takes a moment between the inserts and the scrape: the expected texts are
  // computed from what was scraped (3 hours and that moment).
  const due = stale.get(
    'sett_background_job_oldest_due_seconds{kind="person_deletion",service="management"}',
  )!;
  const lastSuccess = stale.get(
    'sett_background_job_last_success_timestamp_seconds{kind="retention",service="management"}',
  )!;
  expect(due).toBeGreaterThanOrEqual(3 * 3600);
  expect(lastSuccess).toBeLessThanOrEqual(-3 * 3600);
  expect(stale.get('sett_background_job_period_seconds{kind="retention",service="management"}')).toBe(3600);
  expect(stale.get('sett_background_jobs_queued{kind="person_deletion",service="management"}')).toBe(1);
  expect(
    stale.get('sett_background_job_runs_total{kind="retention",outcome="failed",service="management"}'),
  ).toBe(0);

  await pool.query(`DELETE FROM background_jobs`);
  await pool.query(
    `INSERT INTO background_jobs (kind, state, run_after, started_at, finished_at)
     VALUES ('retention', 'succeeded', now() - interval '5 minutes', now() - interval '5 minutes', now() - interval '4 minutes'),
            ('person_deletion', 'queued', now() + interval '10 minutes', NULL, NULL)`,
  );
  const healthy = await scrape();

  const out = promtoolTestRules([
    {
      name: 'retention stopped three hours ago, a deletion due for three hours',
      interval: '1m',
      input_series: seriesFromScrapes([stale]),
      alert_rule_test: [
        alertAt20m('SettRetentionNotSucceeding', [
          {
            exp_labels: { severity: 'warning' },
            exp_annotations: {
              // 3 hours before the scrape, evaluated 20 minutes after it.
              summary: `retention has not succeeded for ${humanize(20 * 60 - lastSuccess)}, more than two periods`,
              description:
                'Expired events are not being dropped and the next monthly events partitions may be missing. Check the management logs for "background job failed" and the background_jobs rows of kind retention.',
            },
          },
        ]),
        alertAt20m('SettBackgroundJobStuck', [
          {
            exp_labels: { severity: 'warning', kind: 'person_deletion' },
            exp_annotations: {
              summary: `a person_deletion job has waited ${humanize(due)} to finish its current phase`,
              description:
                "Due jobs are not being claimed (JOBS_ENABLED=false on every replica, or no management replica runs) or one job runs far longer than usual. SELECT * FROM background_jobs WHERE kind = 'person_deletion' AND state IN ('queued', 'running') ORDER BY run_after.",
            },
          },
        ]),
        alertAt20m('SettBackgroundJobsFailing', []),
      ],
    },
    {
      name: 'retention succeeded minutes ago, nothing overdue',
      interval: '1m',
      input_series: seriesFromScrapes([healthy]),
      alert_rule_test: [
        alertAt20m('SettRetentionNotSucceeding', []),
        alertAt20m('SettBackgroundJobStuck', []),
        alertAt20m('SettBackgroundJobsFailing', []),
      ],
    },
  ]);
  expect(out).toContain('SUCCESS');
});
