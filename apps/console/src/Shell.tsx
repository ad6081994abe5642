// The signed-in console: a header with the project and the user, navigation, and the page the
// URL's hash names (`#/events`). Pages for what the API cannot do yet are not shown.
import { lazy, Suspense, useState, type JSX } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, type Me } from './api';
import { useHashPath } from './hash';
import { Cohorts } from './pages/Cohorts';
import { Flags } from './pages/Flags';
import { LiveEvents } from './pages/LiveEvents';
import { Organization } from './pages/Organization';
import { Persons } from './pages/Persons';
import { Settings } from './pages/Settings';
import { ErrorNote, Skeleton } from './ui';

// The chart pages load their code (and the chart library) when first opened.
const Insights = lazy(() => import('./pages/Insights').then((m) => ({ default: m.Insights })));
const Dashboards = lazy(() => import('./pages/Dashboards').then((m) => ({ default: m.Dashboards })));

type Team = NonNullable<Me['team']>;

const PAGES: Array<{
  path: string;
  title: string;
  render: (team: Team, path: string, me: Me) => JSX.Element;
}> = [
  { path: '/events', title: 'Live events', render: (t) => <LiveEvents projectId={t.id} /> },
  { path: '/persons', title: 'Persons', render: (t) => <Persons projectId={t.id} /> },
  { path: '/insights', title: 'Insights', render: (t) => <Insights projectId={t.id} /> },
  {
    path: '/dashboards',
    title: 'Dashboards',
    render: (t, path) => <Dashboards projectId={t.id} path={path} />,
  },
  {
    path: '/flags',
    title: 'Feature flags',
    render: (t) => <Flags projectId={t.id} projectToken={t.api_token} />,
  },
  { path: '/cohorts', title: 'Cohorts', render: (t) => <Cohorts projectId={t.id} /> },
  { path: '/settings', title: 'Settings', render: (t) => <Settings projectId={t.id} /> },
  {
    path: '/organization',
    title: 'Organization',
    render: (_t, _p, me) => <Organization myEmail={me.email} />,
  },
];

export function Shell({ me }: { me: Me }) {
  const client = useQueryClient();
  const path = useHashPath() || PAGES[0]!.path;
  const [error, setError] = useState<Error | null>(null);
  const page = PAGES.find((p) => path.startsWith(p.path)) ?? PAGES[0]!;

  async function logout() {
    try {
      await api('POST', '/api/logout/');
      // Nothing of the signed-in user's stays cached; `me` is asked again and answers 401.
      client.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
      await client.resetQueries({ queryKey: ['me'] });
    } catch (err) {
      setError(err as Error);
    }
  }

  return (
    <div className="shell">
      <header className="topbar">
        <span className="brand">Sett</span>
        <span className="project" title="Project">
          {me.team?.name ?? 'No project'}
        </span>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a key={p.path} href={`#${p.path}`} aria-current={p === page ? 'page' : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
        <span className="user">{me.email}</span>
        <button type="button" onClick={() => void logout()}>
          Log out
        </button>
      </header>
      {error && <ErrorNote error={error} />}
      <main className="page">
        {me.team ? (
          <Suspense fallback={<Skeleton lines={6} />}>{page.render(me.team, path, me)}</Suspense>
        ) : (
          <p>This account has no project yet.</p>
        )}
      </main>
    </div>
  );
}
