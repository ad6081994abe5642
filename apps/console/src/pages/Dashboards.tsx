// Dashboards: the list (pinned first), and one dashboard with its tiles, each insight drawn from
// its saved result (computed by the server when stale), texts as written.
import { useQuery } from '@tanstack/react-query';
import { api, type Dashboard, type List } from '../api';
import { AnswerView } from '../charts';
import { ErrorNote, Skeleton } from '../ui';

export function Dashboards({ projectId, path }: { projectId: number; path: string }) {
  const id = Number(/^\/dashboards\/(\d+)/.exec(path)?.[1]);
  return id ? <DashboardView projectId={projectId} id={id} /> : <DashboardList projectId={projectId} />;
}

function DashboardList({ projectId }: { projectId: number }) {
  const list = useQuery({
    queryKey: ['dashboards', projectId],
    queryFn: () => api<List<Dashboard>>('GET', `/api/projects/${projectId}/dashboards/?limit=100`),
  });
  return (
    <section aria-labelledby="dashboards-title">
      <div className="page-head">
        <h1 id="dashboards-title">Dashboards</h1>
        <a href="#/insights">New insight</a>
      </div>
      {list.error && <ErrorNote error={list.error} onRetry={() => void list.refetch()} />}
      {list.isPending ? (
        <Skeleton lines={4} />
      ) : list.data && list.data.results.length === 0 ? (
        <p className="empty">No dashboards yet: save an insight to a new one.</p>
      ) : (
        <ul className="list" aria-label="Dashboards">
          {list.data?.results.map((d) => (
            <li key={d.id}>
              <a className="list-item link-item" href={`#/dashboards/${d.id}`}>
                {d.name ?? `Dashboard ${d.id}`}
                {d.pinned ? <span className="muted"> · pinned</span> : null}
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function DashboardView({ projectId, id }: { projectId: number; id: number }) {
  const dashboard = useQuery({
    queryKey: ['dashboard', projectId, id],
    queryFn: () => api<Dashboard>('GET', `/api/projects/${projectId}/dashboards/${id}/?refresh=blocking`),
  });
  if (dashboard.isPending) return <Skeleton lines={8} />;
  if (dashboard.error) return <ErrorNote error={dashboard.error} onRetry={() => void dashboard.refetch()} />;
  const d = dashboard.data;
  return (
    <section aria-labelledby="dashboard-title">
      <div className="page-head">
        <h1 id="dashboard-title">{d.name ?? `Dashboard ${d.id}`}</h1>
        <a href="#/dashboards">All dashboards</a>
      </div>
      {d.description && <p className="muted">{d.description}</p>}
      {d.tiles?.length === 0 && <p className="empty">No tiles yet.</p>}
      <div className="tiles">
        {d.tiles?.map((t) => (
          <article key={t.id} className="card tile" aria-label={t.insight?.name ?? 'Text'}>
            {t.insight ? (
              <>
                <h2>{t.insight.name ?? t.insight.short_id}</h2>
                {t.error ? (
                  <div className="error">{t.error.message}</div>
                ) : (
                  <AnswerView
                    kind={t.insight.query?.source.kind ?? 'TrendsQuery'}
                    results={t.insight.result}
                  />
                )}
              </>
            ) : (
              <p className="tile-text">{t.text?.body}</p>
            )}
          </article>
        ))}
      </div>
    </section>
  );
}
