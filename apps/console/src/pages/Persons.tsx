// Persons: search by distinct id, email or name; a person's properties, distinct ids and newest
// events; and deleting one (PostHog's GDPR path): a confirmation that says what goes, then the
// deletion job's progress until it is done.
import { useState } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type EventRow, type List, type Page, type Person, type PersonDeletion } from '../api';
import { ErrorNote, Skeleton } from '../ui';

const label = (p: Person) => String(p.properties.email ?? p.properties.name ?? p.distinct_ids[0] ?? p.uuid);

/** `#/persons?search=…`: the search a link opened the page with (Live events links here). */
const searchInHash = () => new URLSearchParams(window.location.hash.split('?')[1] ?? '').get('search') ?? '';

export function Persons({ projectId }: { projectId: number }) {
  const [search, setSearch] = useState(searchInHash);
  const [selected, setSelected] = useState<string | null>(null);
  const params = new URLSearchParams({ limit: '50' });
  if (search.trim()) params.set('search', search.trim());
  const persons = useQuery({
    queryKey: ['persons', projectId, params.toString()],
    queryFn: () => api<List<Person>>('GET', `/api/projects/${projectId}/persons/?${params}`),
    placeholderData: keepPreviousData,
  });

  return (
    <section aria-labelledby="persons-title">
      <div className="page-head">
        <h1 id="persons-title">Persons</h1>
      </div>
      <div className="filters">
        <label>
          Search
          <input
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder="distinct id, email or name"
          />
        </label>
      </div>
      <Deletions projectId={projectId} />
      {persons.error && <ErrorNote error={persons.error} onRetry={() => void persons.refetch()} />}
      <div className="split">
        <div>
          {persons.isPending ? (
            <Skeleton lines={6} />
          ) : persons.data && persons.data.results.length === 0 ? (
            <p className="empty">No persons match.</p>
          ) : (
            <ul className="list" aria-label="Persons">
              {persons.data?.results.map((p) => (
                <li key={p.uuid}>
                  <button
                    type="button"
                    className={selected === p.uuid ? 'list-item selected' : 'list-item'}
                    aria-pressed={selected === p.uuid}
                    onClick={() => setSelected(p.uuid)}
                  >
                    {label(p)}
                    <span className="muted"> · {p.distinct_ids.length} id(s)</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
        {selected && (
          <PersonDetail projectId={projectId} uuid={selected} onDeleted={() => setSelected(null)} />
        )}
      </div>
    </section>
  );
}

function PersonDetail({
  projectId,
  uuid,
  onDeleted,
}: {
  projectId: number;
  uuid: string;
  onDeleted: () => void;
}) {
  const client = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const [withEvents, setWithEvents] = useState(false);
  const person = useQuery({
    queryKey: ['person', projectId, uuid],
    queryFn: () => api<Person>('GET', `/api/projects/${projectId}/persons/${uuid}/`),
  });
  const events = useQuery({
    queryKey: ['person-events', projectId, uuid],
    queryFn: () =>
      api<Page<EventRow>>('GET', `/api/projects/${projectId}/events/?person_id=${uuid}&limit=20`),
  });
  const remove = useMutation({
    mutationFn: () =>
      api('DELETE', `/api/projects/${projectId}/persons/${uuid}/${withEvents ? '?delete_events=true' : ''}`),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['persons', projectId] });
      await client.invalidateQueries({ queryKey: ['deletions', projectId] });
      onDeleted();
    },
  });
  if (person.isPending) return <Skeleton lines={5} />;
  if (person.error) return <ErrorNote error={person.error} />;
  const p = person.data;
  return (
    <article className="card detail" aria-label={`Person ${label(p)}`}>
      <h2>{label(p)}</h2>
      <p className="muted">Distinct ids: {p.distinct_ids.join(', ')}</p>
      <table className="table" aria-label="Properties">
        <tbody>
          {Object.entries(p.properties).map(([k, v]) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td>{typeof v === 'string' ? v : JSON.stringify(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Newest events</h2>
      {events.isPending ? (
        <Skeleton lines={3} />
      ) : events.error ? (
        <ErrorNote error={events.error} />
      ) : events.data.results.length === 0 ? (
        <p className="muted">No events.</p>
      ) : (
        <ul className="plain">
          {events.data.results.map((e) => (
            <li key={e.id}>
              <span className="event-name">{e.event}</span>{' '}
              <span className="muted">{new Date(e.timestamp).toLocaleString()}</span>
            </li>
          ))}
        </ul>
      )}
      {!confirming ? (
        <button type="button" className="danger" onClick={() => setConfirming(true)}>
          Delete person…
        </button>
      ) : (
        <div className="confirm" role="group" aria-label="Confirm deletion">
          <p>
            Delete <strong>{label(p)}</strong> and their {p.distinct_ids.length} distinct id(s)? Events sent
            later with those ids make a new person.
          </p>
          <label className="inline">
            <input type="checkbox" checked={withEvents} onChange={(e) => setWithEvents(e.target.checked)} />{' '}
            Also delete their events
          </label>
          {remove.error && <ErrorNote error={remove.error} />}
          <button
            type="button"
            className="danger"
            disabled={remove.isPending}
            onClick={() => remove.mutate()}
          >
            {remove.isPending ? 'Deleting…' : 'Yes, delete'}
          </button>{' '}
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
    </article>
  );
}

/** A deletion job in words: the person and ids go at once; events (if asked) next; then a last
 * sweep after PERSON_DELETION_SETTLE_MS for events that were still on their way. */
function describe(j: PersonDeletion & { run_after?: string }): string {
  if (j.status === 'failed') return `failed${j.last_error ? `: ${j.last_error}` : ''}`;
  if (j.status === 'succeeded') return `done${j.delete_events ? `, ${j.events_deleted} events deleted` : ''}`;
  const events = j.delete_events ? `, ${j.events_deleted} events deleted so far` : '';
  if (j.phase === 'settle' || (j.status === 'queued' && !j.delete_events))
    return `person deleted${events}; a last sweep for events still on their way runs ${
      j.run_after ? `at ${new Date(j.run_after).toLocaleTimeString()}` : 'later'
    }`;
  return `person deleted, deleting events${events}`;
}

/** The newest deletion jobs, polled while one is still under way. */
function Deletions({ projectId }: { projectId: number }) {
  const jobs = useQuery({
    queryKey: ['deletions', projectId],
    queryFn: () => api<List<PersonDeletion>>('GET', `/api/projects/${projectId}/persons/deletions/?limit=5`),
    refetchInterval: (q) =>
      q.state.data?.results.some(
        (j) => j.status === 'running' || (j.status === 'queued' && j.phase === 'events'),
      )
        ? 2_000
        : false,
  });
  const recent = jobs.data?.results.filter((j) => Date.now() - Date.parse(j.created_at) < 3_600_000) ?? [];
  if (recent.length === 0) return null;
  return (
    <div className="card deletions" aria-label="Deletions" aria-live="polite">
      {recent.map((j) => (
        <div key={j.id} className={`deletion ${j.status}`}>
          Deletion #{j.id}: {describe(j)}
        </div>
      ))}
    </div>
  );
}
