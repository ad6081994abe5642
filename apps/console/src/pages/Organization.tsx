// The organization's members and their roles: admins and owners change roles and remove members
// (the API decides, the page follows its answer); anyone else is told plainly that this page is
// not theirs, as the API would refuse them.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, LEVEL_NAMES, type List, type Member, type Organization as Org } from '../api';
import { ErrorNote, Skeleton } from '../ui';

const ADMIN = 8;

export function Organization({ myEmail }: { myEmail: string }) {
  const client = useQueryClient();
  const org = useQuery({
    queryKey: ['organization'],
    queryFn: () => api<Org>('GET', '/api/organizations/@current/'),
  });
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => api<List<Member>>('GET', '/api/organizations/@current/members/?limit=200'),
    enabled: (org.data?.membership_level ?? 0) >= ADMIN,
  });
  const setLevel = useMutation({
    mutationFn: (m: { uuid: string; level: number }) =>
      api('PATCH', `/api/organizations/@current/members/${m.uuid}/`, { level: m.level }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['members'] }),
  });
  const remove = useMutation({
    mutationFn: (uuid: string) => api('DELETE', `/api/organizations/@current/members/${uuid}/`),
    onSuccess: () => client.invalidateQueries({ queryKey: ['members'] }),
  });
  if (org.isPending) return <Skeleton lines={4} />;
  if (org.error) return <ErrorNote error={org.error} />;
  const o = org.data;
  const level = o.membership_level ?? 0;
  return (
    <section aria-labelledby="org-title" className="stack">
      <div className="page-head">
        <h1 id="org-title">Organization “{o.name}”</h1>
      </div>
      {level < ADMIN ? (
        <div className="error" role="alert">
          Members and roles are managed by the organization's admins and owners. Your role here is{' '}
          {LEVEL_NAMES[level] ?? 'none'}.
        </div>
      ) : (
        <div className="card stack" aria-label="Members">
          <h2>Members and roles</h2>
          {(setLevel.error || remove.error) && <ErrorNote error={(setLevel.error ?? remove.error)!} />}
          {members.isPending ? (
            <Skeleton lines={3} />
          ) : members.error ? (
            <ErrorNote error={members.error} />
          ) : (
            <table className="table">
              <tbody>
                {members.data.results.map((m) => (
                  <tr key={m.id}>
                    <td>{m.user.email}</td>
                    <td>
                      <select
                        aria-label={`Role of ${m.user.email}`}
                        value={m.level}
                        disabled={m.user.email === myEmail || setLevel.isPending}
                        onChange={(e) =>
                          setLevel.mutate({ uuid: m.user.uuid, level: Number(e.target.value) })
                        }
                      >
                        {[1, 8, 15].map((l) => (
                          <option key={l} value={l}>
                            {LEVEL_NAMES[l]}
                          </option>
                        ))}
                      </select>
                    </td>
                    <td>
                      {m.user.email !== myEmail && (
                        <button
                          type="button"
                          onClick={() => remove.mutate(m.user.uuid)}
                          aria-label={`Remove ${m.user.email}`}
                        >
                          Remove
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </section>
  );
}
