// Feature flags: the list with search and an active toggle, a form for a new flag (a rollout
// percentage, optional property conditions, optional variants and a payload), and "test for a
// distinct id", which asks decide itself (POST /flags?v=2 with the project's public token).
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, errorText, type Cohort, type Flag, type List } from '../api';
import { ErrorNote, Skeleton } from '../ui';

function rolloutOf(flag: Flag): string {
  const groups = flag.filters.groups ?? [];
  if (groups.length === 0) return 'nobody';
  return groups
    .map((g) => {
      const who = g.properties.length
        ? g.properties
            .map((p) =>
              p.type === 'cohort'
                ? `cohort ${String(p.value)}`
                : `${p.key} ${p.operator ?? 'exact'} ${JSON.stringify(p.value)}`,
            )
            .join(' and ')
        : 'everyone';
      return `${g.rollout_percentage ?? 100}% of ${who}`;
    })
    .join('; ');
}

export function Flags({ projectId, projectToken }: { projectId: number; projectToken: string }) {
  const client = useQueryClient();
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Flag | null>(null);
  const params = new URLSearchParams({ limit: '100' });
  if (search.trim()) params.set('search', search.trim());
  const flags = useQuery({
    queryKey: ['flags', projectId, params.toString()],
    queryFn: () => api<List<Flag>>('GET', `/api/projects/${projectId}/feature_flags/?${params}`),
  });
  const toggle = useMutation({
    mutationFn: (f: Flag) =>
      api<Flag>('PATCH', `/api/projects/${projectId}/feature_flags/${f.id}/`, { active: !f.active }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['flags', projectId] }),
  });

  return (
    <section aria-labelledby="flags-title">
      <div className="page-head">
        <h1 id="flags-title">Feature flags</h1>
        <button
          type="button"
          className="primary"
          onClick={() => setCreating(!creating)}
          aria-expanded={creating}
        >
          {creating ? 'Close' : 'New flag'}
        </button>
      </div>
      {creating && <FlagForm projectId={projectId} onDone={() => setCreating(false)} />}
      {editing && (
        <FlagForm key={editing.id} projectId={projectId} flag={editing} onDone={() => setEditing(null)} />
      )}
      <div className="filters">
        <label>
          Search
          <input value={search} onChange={(e) => setSearch(e.target.value)} placeholder="key or name" />
        </label>
      </div>
      {toggle.error && <ErrorNote error={toggle.error} />}
      {flags.error && <ErrorNote error={flags.error} onRetry={() => void flags.refetch()} />}
      {flags.isPending ? (
        <Skeleton lines={6} />
      ) : flags.data && flags.data.results.length === 0 ? (
        <p className="empty">No flags yet.</p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Release</th>
              <th scope="col">Active</th>
              <th scope="col">
                <span className="sr-only">Edit</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {flags.data?.results.map((f) => (
              <tr key={f.id}>
                <td>
                  <span className="event-name">{f.key}</span>
                  {f.name && <div className="muted">{f.name}</div>}
                </td>
                <td className="muted">
                  {rolloutOf(f)}
                  {f.filters.multivariate?.variants?.length
                    ? ` · variants ${f.filters.multivariate.variants.map((v) => `${v.key} ${v.rollout_percentage}%`).join(', ')}`
                    : ''}
                </td>
                <td>
                  <label className="switch">
                    <input
                      type="checkbox"
                      role="switch"
                      checked={f.active}
                      disabled={toggle.isPending}
                      onChange={() => toggle.mutate(f)}
                      aria-label={`${f.key} active`}
                    />
                  </label>
                </td>
                <td>
                  <button type="button" onClick={() => setEditing(f)} aria-label={`Edit ${f.key}`}>
                    Edit
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <TestFlags projectToken={projectToken} />
    </section>
  );
}

/** The form for a new flag, or for an existing one (`flag`): its first condition set's rollout,
 * person property and cohort, its variants and payload; other condition sets are kept. */
function FlagForm({ projectId, flag, onDone }: { projectId: number; flag?: Flag; onDone: () => void }) {
  const client = useQueryClient();
  const first = flag?.filters.groups?.[0];
  const person = first?.properties.find((p) => p.type === 'person');
  const cohortProp = first?.properties.find((p) => p.type === 'cohort');
  const [key, setKey] = useState(flag?.key ?? '');
  const [name, setName] = useState(flag?.name ?? '');
  const [rollout, setRollout] = useState(String(first?.rollout_percentage ?? 100));
  const [propKey, setPropKey] = useState(person?.key ?? '');
  const [propValue, setPropValue] = useState(person ? String(person.value ?? '') : '');
  const [cohort, setCohort] = useState(cohortProp ? String(cohortProp.value) : '');
  const [variants, setVariants] = useState(
    (flag?.filters.multivariate?.variants ?? []).map((v) => v.key).join(', '),
  );
  const firstPayload = Object.values(flag?.filters.payloads ?? {})[0];
  const [payload, setPayload] = useState(
    firstPayload === undefined
      ? ''
      : typeof firstPayload === 'string'
        ? firstPayload
        : JSON.stringify(firstPayload),
  );
  const [formError, setFormError] = useState<string | null>(null);
  const cohorts = useQuery({
    queryKey: ['cohorts', projectId],
    queryFn: () => api<List<Cohort>>('GET', `/api/projects/${projectId}/cohorts/?limit=100`),
  });
  const save = useMutation({
    mutationFn: (body: unknown) =>
      flag
        ? api<Flag>('PATCH', `/api/projects/${projectId}/feature_flags/${flag.id}/`, body)
        : api<Flag>('POST', `/api/projects/${projectId}/feature_flags/`, body),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['flags', projectId] });
      onDone();
    },
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setFormError(null);
    const variantList = variants
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
    let payloads: Record<string, unknown> | undefined;
    if (payload.trim()) {
      try {
        JSON.parse(payload);
      } catch {
        setFormError('The payload is not valid JSON.');
        return;
      }
      payloads = { [variantList.length ? variantList[0]! : 'true']: payload.trim() };
    }
    const each = variantList.length ? Math.floor(100 / variantList.length) : 0;
    const properties = [
      ...(propKey.trim()
        ? [{ key: propKey.trim(), value: propValue, operator: 'exact', type: 'person' }]
        : []),
      ...(cohort ? [{ key: 'id', value: Number(cohort), type: 'cohort' }] : []),
    ];
    const groups = [
      { properties, rollout_percentage: Number(rollout) },
      ...(flag?.filters.groups ?? []).slice(1),
    ];
    save.mutate({
      ...(flag ? {} : { key: key.trim(), active: true }),
      name: name.trim(),
      filters: {
        groups,
        multivariate: variantList.length
          ? {
              variants: variantList.map((v, i) => ({
                key: v,
                rollout_percentage: i === 0 ? 100 - each * (variantList.length - 1) : each,
              })),
            }
          : null,
        payloads: payloads ?? {},
      },
    });
  }

  return (
    <form className="card form-grid" onSubmit={submit} aria-label={flag ? `Edit ${flag.key}` : 'New flag'}>
      <label>
        Key
        <input
          required
          readOnly={!!flag}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          pattern="[A-Za-z0-9_\-]+"
        />
      </label>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Rollout %
        <input
          type="number"
          min={0}
          max={100}
          required
          value={rollout}
          onChange={(e) => setRollout(e.target.value)}
        />
      </label>
      <label>
        Person property (optional)
        <input value={propKey} onChange={(e) => setPropKey(e.target.value)} placeholder="email" />
      </label>
      <label>
        equals
        <input value={propValue} onChange={(e) => setPropValue(e.target.value)} disabled={!propKey.trim()} />
      </label>
      <label>
        In cohort (optional)
        <select value={cohort} onChange={(e) => setCohort(e.target.value)}>
          <option value="">Any</option>
          {cohorts.data?.results.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Variants (comma-separated, optional)
        <input value={variants} onChange={(e) => setVariants(e.target.value)} placeholder="control, test" />
      </label>
      <label>
        Payload (JSON, optional)
        <input value={payload} onChange={(e) => setPayload(e.target.value)} placeholder='{"color": "blue"}' />
      </label>
      {(formError || save.error) && (
        <div className="error" role="alert">
          {formError ?? errorText(save.error)}
        </div>
      )}
      <div>
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : flag ? 'Save flag' : 'Create flag'}
        </button>{' '}
        {flag && (
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

interface FlagsAnswer {
  flags?: Record<string, { enabled: boolean; variant?: string | null; reason?: { description?: string } }>;
  errorsWhileComputingFlags?: boolean;
}

/** What decide answers for a distinct id (`/flags?v=2`, as current SDKs ask): every flag's value
 * and the reason decide gives for it. */
function TestFlags({ projectToken }: { projectToken: string }) {
  const [distinctId, setDistinctId] = useState('');
  const test = useMutation({
    mutationFn: (id: string) =>
      api<FlagsAnswer>('POST', '/flags/?v=2', { api_key: projectToken, distinct_id: id }),
  });
  const flags = Object.entries(test.data?.flags ?? {});
  return (
    <form
      className="card test-flags"
      aria-label="Test flags for a distinct id"
      onSubmit={(e) => {
        e.preventDefault();
        test.mutate(distinctId.trim());
      }}
    >
      <h2>Test for a distinct id</h2>
      <label>
        Distinct id
        <input required value={distinctId} onChange={(e) => setDistinctId(e.target.value)} />
      </label>
      <button type="submit" disabled={test.isPending}>
        {test.isPending ? 'Asking decide…' : 'Evaluate'}
      </button>
      {test.error && <ErrorNote error={test.error} />}
      {test.data?.errorsWhileComputingFlags && (
        <div className="error" role="alert">
          Decide could not compute every flag (errorsWhileComputingFlags).
        </div>
      )}
      {test.data &&
        (flags.length === 0 ? (
          <p className="muted">No active flags.</p>
        ) : (
          <table className="table" aria-label="Flag values">
            <tbody>
              {flags.map(([k, v]) => (
                <tr key={k}>
                  <td className="event-name">{k}</td>
                  <td>{v.variant ?? String(v.enabled)}</td>
                  <td className="muted">{v.reason?.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
    </form>
  );
}
