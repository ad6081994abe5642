// Building an insight with /query/: a trend (with a breakdown), a funnel or a retention table,
// drawn as the answer comes; then saving it, on a dashboard new or existing, through the insights
// and dashboards API in PostHog's shapes.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, errorText, type Dashboard, type Insight, type List, type QueryAnswer } from '../api';
import { AnswerView } from '../charts';
import { ErrorNote, Skeleton } from '../ui';

type Kind = 'TrendsQuery' | 'FunnelsQuery' | 'RetentionQuery';

const RANGES = [
  ['-24h', 'Last 24 hours'],
  ['-7d', 'Last 7 days'],
  ['-30d', 'Last 30 days'],
  ['-90d', 'Last 90 days'],
] as const;

function buildSource(
  kind: Kind,
  f: { events: string; math: string; interval: string; range: string; breakdown: string },
) {
  const events = f.events
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const dateRange = { date_from: f.range };
  if (kind === 'FunnelsQuery')
    return {
      kind,
      series: events.map((event) => ({ kind: 'EventsNode', event, name: event })),
      dateRange,
      funnelsFilter: { funnelWindowInterval: 14, funnelWindowIntervalUnit: 'day' },
    };
  if (kind === 'RetentionQuery') {
    const entity = { id: events[0] ?? '$pageview', name: events[0] ?? '$pageview', type: 'events' };
    return {
      kind,
      dateRange,
      retentionFilter: { period: 'Week', totalIntervals: 8, targetEntity: entity, returningEntity: entity },
    };
  }
  return {
    kind,
    series: events.map((event) => ({ kind: 'EventsNode', event, name: event, math: f.math })),
    dateRange,
    interval: f.interval,
    ...(f.breakdown.trim()
      ? { breakdownFilter: { breakdown: f.breakdown.trim(), breakdown_type: 'event', breakdown_limit: 10 } }
      : {}),
  };
}

export function Insights({ projectId }: { projectId: number }) {
  const [kind, setKind] = useState<Kind>('TrendsQuery');
  const [form, setForm] = useState({
    events: '$pageview',
    math: 'total',
    interval: 'day',
    range: '-7d',
    breakdown: '',
  });
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [k]: e.target.value });
  const run = useMutation({
    mutationFn: (source: object) =>
      api<QueryAnswer>('POST', `/api/projects/${projectId}/query/`, {
        query: { kind: 'InsightVizNode', source },
      }),
  });
  const [ran, setRan] = useState<{ kind: Kind; source: object } | null>(null);
  const names = useQuery({
    queryKey: ['event-names', projectId],
    queryFn: () =>
      api<List<{ name: string }>>('GET', `/api/projects/${projectId}/event_definitions/?limit=200`),
  });
  const props = useQuery({
    queryKey: ['event-props', projectId],
    queryFn: () =>
      api<List<{ name: string }>>(
        'GET',
        `/api/projects/${projectId}/property_definitions/?type=event&limit=200`,
      ),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    const source = buildSource(kind, form);
    setRan({ kind, source });
    run.mutate(source);
  }

  return (
    <section aria-labelledby="insights-title">
      <div className="page-head">
        <h1 id="insights-title">New insight</h1>
      </div>
      <form className="card form-grid" onSubmit={submit} aria-label="Insight">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="TrendsQuery">Trends</option>
            <option value="FunnelsQuery">Funnel</option>
            <option value="RetentionQuery">Retention</option>
          </select>
        </label>
        <label>
          {kind === 'FunnelsQuery' ? 'Steps (events, in order)' : kind === 'TrendsQuery' ? 'Events' : 'Event'}
          <input list="event-names" required value={form.events} onChange={set('events')} />
        </label>
        {kind === 'TrendsQuery' && (
          <>
            <label>
              Count
              <select value={form.math} onChange={set('math')}>
                <option value="total">Total events</option>
                <option value="dau">Unique users</option>
                <option value="weekly_active">Weekly active users</option>
              </select>
            </label>
            <label>
              Interval
              <select value={form.interval} onChange={set('interval')}>
                <option value="hour">Hour</option>
                <option value="day">Day</option>
                <option value="week">Week</option>
                <option value="month">Month</option>
              </select>
            </label>
            <label>
              Breakdown by property
              <input
                list="event-props"
                value={form.breakdown}
                onChange={set('breakdown')}
                placeholder="$browser"
              />
            </label>
          </>
        )}
        <label>
          Range
          <select value={form.range} onChange={set('range')}>
            {RANGES.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <div>
          <button type="submit" className="primary" disabled={run.isPending}>
            {run.isPending ? 'Running…' : 'Run'}
          </button>
        </div>
        <datalist id="event-names">
          {names.data?.results.map((n) => (
            <option key={n.name} value={n.name} />
          ))}
        </datalist>
        <datalist id="event-props">
          {props.data?.results.map((n) => (
            <option key={n.name} value={n.name} />
          ))}
        </datalist>
      </form>
      {run.error && <ErrorNote error={run.error} />}
      {run.isPending && <Skeleton lines={6} />}
      {run.data && ran && (
        <div className="card result">
          <AnswerView kind={ran.kind} results={run.data.results} />
          <SaveInsight projectId={projectId} source={ran.source} />
        </div>
      )}
    </section>
  );
}

function SaveInsight({ projectId, source }: { projectId: number; source: object }) {
  const client = useQueryClient();
  const [name, setName] = useState('');
  const [dashboard, setDashboard] = useState('');
  const [newDashboard, setNewDashboard] = useState('');
  const dashboards = useQuery({
    queryKey: ['dashboards', projectId],
    queryFn: () => api<List<Dashboard>>('GET', `/api/projects/${projectId}/dashboards/?limit=100`),
  });
  const save = useMutation({
    mutationFn: async () => {
      let target: number | undefined = dashboard && dashboard !== 'new' ? Number(dashboard) : undefined;
      if (dashboard === 'new')
        target = (
          await api<Dashboard>('POST', `/api/projects/${projectId}/dashboards/`, {
            name: newDashboard.trim(),
          })
        ).id;
      return api<Insight>('POST', `/api/projects/${projectId}/insights/`, {
        name: name.trim(),
        query: { kind: 'InsightVizNode', source },
        saved: true,
        ...(target ? { dashboards: [target] } : {}),
      });
    },
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['dashboards', projectId] });
      await client.invalidateQueries({ queryKey: ['dashboard', projectId] });
    },
  });
  return (
    <form
      className="form-grid save"
      aria-label="Save insight"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      <label>
        Name
        <input required value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Add to dashboard
        <select value={dashboard} onChange={(e) => setDashboard(e.target.value)}>
          <option value="">None</option>
          {dashboards.data?.results.map((d) => (
            <option key={d.id} value={d.id}>
              {d.name ?? `Dashboard ${d.id}`}
            </option>
          ))}
          <option value="new">New dashboard…</option>
        </select>
      </label>
      {dashboard === 'new' && (
        <label>
          Dashboard name
          <input required value={newDashboard} onChange={(e) => setNewDashboard(e.target.value)} />
        </label>
      )}
      <div>
        <button type="submit" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Save insight'}
        </button>
      </div>
      {save.error && (
        <div className="error" role="alert">
          {errorText(save.error)}
        </div>
      )}
      {save.data && (
        <p role="status">
          Saved as “{save.data.name}”
          {save.data.dashboards.length ? (
            <>
              {' '}
              on <a href={`#/dashboards/${save.data.dashboards[0]}`}>its dashboard</a>
            </>
          ) : null}
          .
        </p>
      )}
    </form>
  );
}
