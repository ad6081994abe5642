// Who is signed in decides what shows: the sign-in form, or the console's shell with its pages.
import { useQuery } from '@tanstack/react-query';
import { api, ApiError, type Me } from './api';
import { useHashPath } from './hash';
import { Login } from './Login';
import { Shell } from './Shell';
import { Signup } from './Signup';
import { ErrorNote, Skeleton } from './ui';

export function App() {
  const me = useQuery({ queryKey: ['me'], queryFn: () => api<Me>('GET', '/api/users/@me/') });
  // An invite link opened in a signed-out tab changes only the hash: follow it.
  const hash = useHashPath();
  if (me.isPending)
    return (
      <main className="centered" aria-busy="true">
        <Skeleton lines={3} />
      </main>
    );
  if (me.error instanceof ApiError && me.error.status === 401) {
    const invite = /^\/signup\/([^/?]+)/.exec(hash)?.[1];
    return invite ? <Signup inviteId={invite} /> : <Login />;
  }
  if (me.error) return <ErrorNote error={me.error} onRetry={() => void me.refetch()} />;
  return <Shell me={me.data} />;
}
