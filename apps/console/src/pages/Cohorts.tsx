// Cohorts and early access features. A cohort is static (its members from a CSV of distinct ids,
// one per line, more added later the same way) or dynamic (persons whose property matches); an
// early access feature has a stage that its flag and PostHog's SDKs follow.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, errorText, type Cohort, type EarlyAccessFeature, type List } from '../api';
import { ErrorNote, Skeleton } from '../ui';

const STAGES = ['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived'];

export function Cohorts({ projectId }: { projectId: number }) {
  return (
    <section className="stack" aria-labelledby="cohorts-title">
      <div className="page-head">
        <h1 id="cohorts-title">Cohorts</h1>
      </div>
      <CohortList projectId={projectId} />
      <Features projectId={projectId} />
    </section>
  );
}

function CohortList({ projectId }: { projectId: number }) {
  const client = useQueryClient();
  const base = `/api/projects/${projectId}/cohorts/`;
  const cohorts = useQuery({
    queryKey: ['cohorts', projectId],
    queryFn: () => api<List<Cohort>>('GET', `${base}?limit=100`),
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['cohorts', projectId] });
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'static' | 'dynamic'>('static');
  const [file, setFile] = useState<File | null>(null);
  const [propKey, setPropKey] = useState('');
  const [propValue, setPropValue] = useState('');
  const create = useMutation({
    mutationFn: () => {
      if (kind === 'static') {
        const form = new FormData();
        form.set('name', name.trim());
        form.set('is_static', 'true');
        if (file) form.set('csv', file);
        return api<Cohort>('POST', base, form);
      }
      return api<Cohort>('POST', base, {
        name: name.trim(),
        filters: {
          properties: {
            type: 'OR',
            values: [
              {
                type: 'AND',
                values: [{ key: propKey.trim(), value: propValue, operator: 'exact', type: 'person' }],
              },
            ],
          },
        },
      });
    },
    onSuccess: refresh,
  });
  const addCsv = useMutation({
    mutationFn: ({ id, csv }: { id: number; csv: File }) => {
      const form = new FormData();
      form.set('csv', csv);
      return api<Cohort>('PATCH', `${base}${id}/`, form);
    },
    onSuccess: refresh,
  });
  const rename = useMutation({
    mutationFn: ({ id, newName }: { id: number; newName: string }) =>
      api<Cohort>('PATCH', `${base}${id}/`, { name: newName }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: number) => api('PATCH', `${base}${id}/`, { deleted: true }),
    onSuccess: refresh,
  });
  const failure = create.error ?? addCsv.error ?? rename.error ?? remove.error;
  return (
    <div className="card stack" aria-label="Cohort list">
      <form
        className="form-grid"
        aria-label="New cohort"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Cohort name
          <input required value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.target.value as 'static' | 'dynamic')}>
            <option value="static">Static (a CSV of distinct ids)</option>
            <option value="dynamic">Dynamic (a person property)</option>
          </select>
        </label>
        {kind === 'static' ? (
          <label>
            CSV of distinct ids
            <input
              type="file"
              accept=".csv,text/csv,text/plain"
              onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            />
          </label>
        ) : (
          <>
            <label>
              Person property
              <input
                required
                value={propKey}
                onChange={(e) => setPropKey(e.target.value)}
                placeholder="plan"
              />
            </label>
            <label>
              equals
              <input value={propValue} onChange={(e) => setPropValue(e.target.value)} />
            </label>
          </>
        )}
        <div>
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create cohort'}
          </button>
        </div>
      </form>
      {failure && (
        <div className="error" role="alert">
          {errorText(failure)}
        </div>
      )}
      {cohorts.error && <ErrorNote error={cohorts.error} />}
      {cohorts.isPending ? (
        <Skeleton lines={3} />
      ) : (
        <table className="table" aria-label="Cohorts">
          <tbody>
            {cohorts.data?.results.map((c) => (
              <tr key={c.id}>
                <td>{c.name}</td>
                <td className="muted">{c.is_static ? `static · ${c.count ?? 0} members` : 'dynamic'}</td>
                <td>
                  {c.is_static && (
                    <label className="inline">
                      Add CSV
                      <input
                        type="file"
                        accept=".csv,text/csv,text/plain"
                        aria-label={`Add a CSV to ${c.name}`}
                        onChange={(e) => {
                          const csv = e.target.files?.[0];
                          if (csv) addCsv.mutate({ id: c.id, csv });
                        }}
                      />
                    </label>
                  )}
                </td>
                <td>
                  <button
                    type="button"
                    onClick={() => {
                      const newName = window.prompt('New name', c.name);
                      if (newName && newName.trim()) rename.mutate({ id: c.id, newName: newName.trim() });
                    }}
                  >
                    Rename
                  </button>{' '}
                  <button type="button" onClick={() => remove.mutate(c.id)} aria-label={`Delete ${c.name}`}>
                    Delete
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

function Features({ projectId }: { projectId: number }) {
  const client = useQueryClient();
  const base = `/api/projects/${projectId}/early_access_feature/`;
  const features = useQuery({
    queryKey: ['features', projectId],
    queryFn: () => api<List<EarlyAccessFeature>>('GET', `${base}?limit=100`),
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['features', projectId] });
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () => api('POST', base, { name: name.trim(), description, stage: 'beta' }),
    onSuccess: refresh,
  });
  const stage = useMutation({
    mutationFn: ({ id, value }: { id: string; value: string }) =>
      api('PATCH', `${base}${id}/`, { stage: value }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => api('DELETE', `${base}${id}/`),
    onSuccess: refresh,
  });
  const failure = create.error ?? stage.error ?? remove.error;
  return (
    <div className="card stack" aria-label="Early access features">
      <h2>Early access features</h2>
      <form
        className="form-grid"
        aria-label="New early access feature"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label>
          Feature name
          <input required value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Description
          <input value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <div>
          <button type="submit" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create (beta)'}
          </button>
        </div>
      </form>
      {failure && (
        <div className="error" role="alert">
          {errorText(failure)}
        </div>
      )}
      {features.isPending ? (
        <Skeleton lines={2} />
      ) : (
        <table className="table" aria-label="Features">
          <tbody>
            {features.data?.results.map((f) => (
              <tr key={f.id}>
                <td>{f.name}</td>
                <td className="event-name">{f.feature_flag?.key}</td>
                <td>
                  <select
                    aria-label={`Stage of ${f.name}`}
                    value={f.stage}
                    onChange={(e) => stage.mutate({ id: f.id, value: e.target.value })}
                  >
                    {STAGES.map((s) => (
                      <option key={s} value={s}>
                        {s}
                      </option>
                    ))}
                  </select>
                </td>
                <td>
                  <button type="button" onClick={() => remove.mutate(f.id)} aria-label={`Delete ${f.name}`}>
                    Delete
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
