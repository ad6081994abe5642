// Project settings and personal API keys: the project API key with a snippet ready to paste, data
// retention and the secret key rotation (organization admins; the API refuses others and the page
// says so), and the user's personal API keys (created with the key shown once, revoked).
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, errorText, type List, type PersonalKey, type Project } from '../api';
import { ErrorNote, Skeleton } from '../ui';

export function Settings({ projectId }: { projectId: number }) {
  return (
    <section aria-labelledby="settings-title" className="stack">
      <div className="page-head">
        <h1 id="settings-title">Settings</h1>
      </div>
      <ProjectSettings projectId={projectId} />
      <PersonalKeys />
    </section>
  );
}

function ProjectSettings({ projectId }: { projectId: number }) {
  const client = useQueryClient();
  const project = useQuery({
    queryKey: ['project', projectId],
    queryFn: () => api<Project>('GET', `/api/projects/${projectId}/`),
  });
  const [retention, setRetention] = useState<string | null>(null);
  const saveRetention = useMutation({
    mutationFn: (days: number | null) =>
      api<Project>('PATCH', `/api/projects/${projectId}/`, { data_retention_days: days }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['project', projectId] }),
  });
  const rotate = useMutation({
    mutationFn: () => api<Project>('PATCH', `/api/projects/${projectId}/rotate_secret_token/`),
  });
  if (project.isPending) return <Skeleton lines={4} />;
  if (project.error) return <ErrorNote error={project.error} />;
  const p = project.data;
  const snippet = `posthog.init('${p.api_token}', { api_host: '${window.location.origin}' })`;
  const days = retention ?? (p.data_retention_days === null ? '' : String(p.data_retention_days));
  return (
    <div className="card stack" aria-label="Project">
      <h2>Project “{p.name}”</h2>
      <label>
        Project API key (public: SDKs send it with every event)
        <input readOnly value={p.api_token} onFocus={(e) => e.target.select()} />
      </label>
      <label>
        Snippet for posthog-js
        <textarea readOnly rows={2} value={snippet} onFocus={(e) => e.target.select()} />
      </label>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          saveRetention.mutate(days.trim() ? Number(days) : null);
        }}
      >
        <label>
          Keep events for (days; empty keeps them forever)
          <input
            type="number"
            min={1}
            max={36500}
            value={days}
            onChange={(e) => setRetention(e.target.value)}
          />
        </label>
        <button type="submit" disabled={saveRetention.isPending}>
          {saveRetention.isPending ? 'Saving…' : 'Save retention'}
        </button>
      </form>
      {saveRetention.error && <ErrorNote error={saveRetention.error} />}
      {saveRetention.isSuccess && <p role="status">Retention saved.</p>}
      <div>
        <button type="button" onClick={() => rotate.mutate()} disabled={rotate.isPending}>
          {rotate.isPending ? 'Rotating…' : 'Rotate the secret API key'}
        </button>
        <p className="muted">
          A new secret key (phs_…) for local evaluation; the old one keeps working as a backup until it is
          deleted.
        </p>
      </div>
      {rotate.error && <ErrorNote error={rotate.error} />}
      {rotate.data?.secret_api_token && (
        <label>
          New secret key, shown only now
          <input readOnly value={rotate.data.secret_api_token} onFocus={(e) => e.target.select()} />
        </label>
      )}
    </div>
  );
}

const SCOPE_PRESETS = {
  all: { label: 'Everything (*)', scopes: ['*'] },
  read: {
    label: 'Read only',
    scopes: [
      'project:read',
      'feature_flag:read',
      'person:read',
      'query:read',
      'insight:read',
      'dashboard:read',
      'event_definition:read',
      'property_definition:read',
    ],
  },
  flags: { label: 'Feature flags', scopes: ['feature_flag:write'] },
} as const;

function PersonalKeys() {
  const client = useQueryClient();
  const [label, setLabel] = useState('');
  const [preset, setPreset] = useState<keyof typeof SCOPE_PRESETS>('read');
  const keys = useQuery({
    queryKey: ['personal-keys'],
    queryFn: () => api<List<PersonalKey> | PersonalKey[]>('GET', '/api/personal_api_keys/'),
  });
  const create = useMutation({
    mutationFn: () =>
      api<PersonalKey>('POST', '/api/personal_api_keys/', {
        label: label.trim(),
        scopes: [...SCOPE_PRESETS[preset].scopes],
      }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['personal-keys'] }),
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api('DELETE', `/api/personal_api_keys/${id}/`),
    onSuccess: () => client.invalidateQueries({ queryKey: ['personal-keys'] }),
  });
  const list = Array.isArray(keys.data) ? keys.data : (keys.data?.results ?? []);
  return (
    <div className="card stack" aria-label="Personal API keys">
      <h2>Personal API keys</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Label
          <input required maxLength={40} value={label} onChange={(e) => setLabel(e.target.value)} />
        </label>
        <label>
          Scopes
          <select value={preset} onChange={(e) => setPreset(e.target.value as keyof typeof SCOPE_PRESETS)}>
            {Object.entries(SCOPE_PRESETS).map(([k, v]) => (
              <option key={k} value={k}>
                {v.label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </button>
      </form>
      {create.error && (
        <div className="error" role="alert">
          {errorText(create.error)}
        </div>
      )}
      {create.data?.value && (
        <label>
          The new key, shown only now: copy it
          <input readOnly value={create.data.value} onFocus={(e) => e.target.select()} />
        </label>
      )}
      {revoke.error && <ErrorNote error={revoke.error} />}
      {keys.isPending ? (
        <Skeleton lines={3} />
      ) : (
        <table className="table" aria-label="Keys">
          <tbody>
            {list.map((k) => (
              <tr key={k.id}>
                <td>{k.label}</td>
                <td className="event-name">{k.mask_value}</td>
                <td className="muted">{k.scopes.join(', ')}</td>
                <td className="muted">
                  {k.last_used_at ? `used ${new Date(k.last_used_at).toLocaleString()}` : 'never used'}
                </td>
                <td>
                  <button type="button" onClick={() => revoke.mutate(k.id)} aria-label={`Revoke ${k.label}`}>
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
