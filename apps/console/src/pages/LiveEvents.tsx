// The newest events of the project, refreshed every few seconds, filtered by event name and
// distinct id: "are today's events arriving?" without a terminal.
import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, type EventRow, type Page } from '../api';
import { ErrorNote, Skeleton } from '../ui';

const REFRESH_MS = 5_000;

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}

export function LiveEvents({ projectId }: { projectId: number }) {
  const [event, setEvent] = useState('');
  const [distinctId, setDistinctId] = useState('');
  const [paused, setPaused] = useState(false);
  const params = new URLSearchParams({ limit: '50' });
  if (event.trim()) params.set('event', event.trim());
  if (distinctId.trim()) params.set('distinct_id', distinctId.trim());
  const events = useQuery({
    queryKey: ['events', projectId, params.toString()],
    queryFn: () => api<Page<EventRow>>('GET', `/api/projects/${projectId}/events/?${params}`),
    refetchInterval: paused ? false : REFRESH_MS,
    placeholderData: keepPreviousData,
  });

  return (
    <section aria-labelledby="events-title">
      <div className="page-head">
        <h1 id="events-title">Live events</h1>
        <button type="button" onClick={() => setPaused(!paused)} aria-pressed={paused}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <span className="muted" aria-live="polite">
          {paused ? 'Paused' : `Refreshing every ${REFRESH_MS / 1000} s`}
          {events.isFetching ? ' · updating…' : ''}
        </span>
      </div>
      <div className="filters">
        <label>
          Event name
          <input value={event} onChange={(e) => setEvent(e.target.value)} placeholder="$pageview" />
        </label>
        <label>
          Distinct id
          <input value={distinctId} onChange={(e) => setDistinctId(e.target.value)} />
        </label>
      </div>
      {events.error && <ErrorNote error={events.error} onRetry={() => void events.refetch()} />}
      {events.isPending ? (
        <Skeleton lines={8} />
      ) : events.data && events.data.results.length === 0 ? (
        <p className="empty">No events match yet. Events sent to this project show up here within seconds.</p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Person</th>
              <th scope="col">URL or screen</th>
              <th scope="col">Time</th>
            </tr>
          </thead>
          <tbody>
            {events.data?.results.map((e) => (
              <tr key={e.id}>
                <td className="event-name">{e.event}</td>
                <td>
                  <a href={`#/persons?search=${encodeURIComponent(e.distinct_id)}`} title="Open this person">
                    {String(e.person?.properties?.email ?? e.distinct_id)}
                  </a>
                </td>
                <td className="muted">
                  {String(e.properties.$current_url ?? e.properties.$screen_name ?? '')}
                </td>
                <td title={e.timestamp}>{ago(e.timestamp)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
