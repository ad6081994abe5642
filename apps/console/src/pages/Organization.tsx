// The organization's members and their roles: admins and owners change roles and remove members
// (the API decides, the page follows its answer); anyone else is told plainly that this page is
// not theirs, as the API would refuse them.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, errorText, LEVEL_NAMES, type List, type Member, type Organization as Org } from '../api';
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
        <Invites myLevel={level} />
      )}
      {level >= ADMIN && (
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

interface Invite {
  id: string;
  target_email: string;
  level: number;
  is_expired: boolean;
}

/** Invite links: Sett sends no email, so the admin hands the link over. */
function Invites({ myLevel }: { myLevel: number }) {
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [level, setLevel] = useState(1);
  const invites = useQuery({
    queryKey: ['invites'],
    queryFn: () => api<Invite[]>('GET', '/api/organizations/@current/invites/'),
  });
  const create = useMutation({
    mutationFn: () =>
      api<Invite>('POST', '/api/organizations/@current/invites/', { target_email: email.trim(), level }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['invites'] }),
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api('DELETE', `/api/organizations/@current/invites/${id}/`),
    onSuccess: () => client.invalidateQueries({ queryKey: ['invites'] }),
  });
  const link = (id: string) => `${window.location.origin}/#/signup/${id}`;
  return (
    <div className="card stack" aria-label="Invites">
      <h2>Invite someone</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Email to invite
          <input type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          Role
          <select value={level} onChange={(e) => setLevel(Number(e.target.value))}>
            {[1, 8, 15]
              .filter((l) => l <= myLevel)
              .map((l) => (
                <option key={l} value={l}>
                  {LEVEL_NAMES[l]}
                </option>
              ))}
          </select>
        </label>
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? 'Inviting…' : 'Create invite link'}
        </button>
      </form>
      {(create.error || revoke.error) && (
        <div className="error" role="alert">
          {errorText(create.error ?? revoke.error)}
        </div>
      )}
      {create.data && (
        <label>
          Invite link for {create.data.target_email} (valid 3 days, once): send it to them
          <input readOnly value={link(create.data.id)} onFocus={(e) => e.target.select()} />
        </label>
      )}
      {invites.data && invites.data.length > 0 && (
        <table className="table" aria-label="Open invites">
          <tbody>
            {invites.data.map((i) => (
              <tr key={i.id}>
                <td>{i.target_email}</td>
                <td className="muted">
                  {LEVEL_NAMES[i.level]}
                  {i.is_expired ? ' · expired' : ''}
                </td>
                <td>
                  <button
                    type="button"
                    onClick={() => revoke.mutate(i.id)}
                    aria-label={`Revoke the invite of ${i.target_email}`}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
