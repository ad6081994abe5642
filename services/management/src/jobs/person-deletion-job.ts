// The person_deletion job (queued by persons/person-deletion.ts) in two phases:
// 1. "events": when delete_events was asked, deletes the events of the erased distinct ids in
//    bounded batches (each its own statement, through the (team_id, distinct_id, timestamp)
//    index of every partition), then waits for the settle time.
// 2. "settle", settleMs after the request, when events that were still in Kafka at the request
//    have been ingested: those events created a new, empty person (never the old one, which was
//    gone). That person and the events are pre-request data of the erased person, so they are
//    erased too: persons now holding the distinct ids that were created from events dated before
//    the request and that hold no other distinct id, and (with delete_events) again every event
//    of the distinct ids dated before the request or stored before it. Events sent after the
//    request are new data and stay. docs/data-lifecycle.md has the reasoning.
import type { JobHandler } from './job-runner';
import type { PersonDeletionPayload } from '../persons/person-deletion';

const BATCH = 5000;

export function personDeletionJob(opts: { settleMs: number }): JobHandler {
  return async (job, ctx) => {
    const teamId = job.team_id!;
    const payload = job.payload as unknown as PersonDeletionPayload;
    const requestedAt = new Date(payload.requested_at);
    const progress = { phase: 'events', events_deleted: 0, persons_swept: 0, ...job.progress } as {
      phase: 'events' | 'settle';
      events_deleted: number;
      persons_swept: number;
    };

    const deleteEvents = async () => {
      for (;;) {
        const result = await ctx.pool.query(
          `DELETE FROM events WHERE (team_id, uuid) IN (
             SELECT team_id, uuid FROM events
              WHERE team_id = $1 AND distinct_id = ANY($2::text[]) AND (timestamp < $3 OR created_at <= $3)
              LIMIT ${BATCH})`,
          [teamId, payload.distinct_ids, requestedAt],
        );
        progress.events_deleted += result.rowCount ?? 0;
        await ctx.step(progress);
        if ((result.rowCount ?? 0) < BATCH) return;
      }
    };

    if (progress.phase === 'events') {
      if (payload.delete_events) await deleteEvents();
      progress.phase = 'settle';
      const settleAt = new Date(requestedAt.getTime() + opts.settleMs);
      if (settleAt.getTime() > Date.now()) return { kind: 'later', runAfter: settleAt, progress };
    }

    const swept = await ctx.pool.query(
      `DELETE FROM persons p
        WHERE p.team_id = $1 AND p.created_at < $3
          AND p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = ANY($2::text[]))
          AND NOT EXISTS (SELECT 1 FROM person_distinct_ids o
                           WHERE o.person_id = p.id AND NOT (o.distinct_id = ANY($2::text[])))`,
      [teamId, payload.distinct_ids, requestedAt],
    );
    progress.persons_swept += swept.rowCount ?? 0;
    await ctx.step(progress);
    if (payload.delete_events) await deleteEvents();
    // The job row outlives the erasure: keep counts, not the identifiers of the erased person.
    await ctx.pool.query(
      `UPDATE background_jobs
          SET payload = (payload - 'distinct_ids' - 'person_uuids')
                        || jsonb_build_object('distinct_id_count', jsonb_array_length(payload->'distinct_ids'))
        WHERE id = $1`,
      [job.id],
    );
    return { kind: 'done', progress: { ...progress, phase: 'done' } };
  };
}
