// Runs migration 20261123110000_events_partitions_and_jobs online on a large events table
// (docs/operations.md, "Upgrading a large events table"): prepare, copy (repeat until done;
// resumable), compare, then finish with ingestion stopped. DATABASE_URL names the database.
//
//   tsx scripts/partition-events-online.ts prepare|copy|compare|finish|status
//   node dist/partition-events-online.cjs ...          (in the image)
import {
  compareEventsOnline,
  copyEventsOnline,
  createPgPool,
  finishPartitionedEvents,
  onlinePartitionState,
  preparePartitionedEvents,
} from '@sett/db';

const USAGE =
  'usage: partition-events-online prepare|copy|compare|finish|status (DATABASE_URL names the database)';

async function main(command: string | undefined): Promise<number> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl || !command) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const pool = createPgPool({ databaseUrl, max: 2, applicationName: 'sett-partition-events-online' });
  const say = (line: string) => process.stdout.write(`${line}\n`);
  try {
    switch (command) {
      case 'status':
        say(`online partitioning: ${await onlinePartitionState(pool)}`);
        return 0;
      case 'prepare':
        await preparePartitionedEvents(pool);
        say('events_next created; inserts into and deletes from events are mirrored to it. Next: copy');
        return 0;
      case 'copy': {
        const started = Date.now();
        const p = await copyEventsOnline(pool, (s) => {
          if (s.slices % 50 === 0 || s.remaining === 0)
            say(
              `project ${s.teamId} ${s.month}: ${s.rows} rows; ${s.slices} slices done, ${s.remaining} left`,
            );
        });
        say(
          `copied ${p.copied} rows in ${p.slices} slices in ${((Date.now() - started) / 1000).toFixed(1)} s. Next: stop ingestion, then finish`,
        );
        return 0;
      }
      case 'compare': {
        const d = await compareEventsOnline(pool);
        say(`rows in events but not events_next: ${d.missing}; in events_next but not events: ${d.extra}`);
        return d.missing === 0 && d.extra === 0 ? 0 : 1;
      }
      case 'finish':
        await finishPartitionedEvents(pool);
        say(
          'events is partitioned and the migration is recorded as applied. Next: prisma migrate deploy, then start ingestion',
        );
        return 0;
      default:
        process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
        return 2;
    }
  } finally {
    await pool.end();
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`partition-events-online: ${error.message}\n`);
    process.exit(1);
  },
);
