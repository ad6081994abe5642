// How query answers are drawn: a trends line chart (uPlot: about 20 KB gzipped, canvas, fast with
// thousands of points), funnel bars and a retention table (plain HTML: nothing to gain from a
// chart library there). Each takes the answer's `results` as /query/ gives them.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface TrendSeries {
  label: string;
  days: string[];
  data: number[];
  count: number;
  breakdown_value?: unknown;
}

export interface FunnelStep {
  name: string;
  custom_name?: string | null;
  count: number;
  order: number;
}

export interface RetentionRow {
  date: string;
  label: string;
  values: Array<{ count: number }>;
}

const COLORS = ['#3b5bdb', '#e8590c', '#2b8a3e', '#ae3ec9', '#1098ad', '#c92a2a', '#5c940d', '#f08c00'];

function seriesName(s: TrendSeries): string {
  if (s.breakdown_value === undefined || s.breakdown_value === null) return s.label;
  const value = Array.isArray(s.breakdown_value) ? s.breakdown_value.join(', ') : String(s.breakdown_value);
  // A breakdown series is labelled with its value already.
  return s.label === value ? value : `${s.label} · ${value}`;
}

export function TrendsChart({ series, height = 280 }: { series: TrendSeries[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || series.length === 0) return;
    const days = series[0]!.days.map((d) => Date.parse(d) / 1000);
    const plot = new uPlot(
      {
        width: el.clientWidth || 600,
        height,
        series: [
          {},
          ...series.map((s, i) => ({ label: seriesName(s), stroke: COLORS[i % COLORS.length], width: 2 })),
        ],
        axes: [{}, { size: 60 }],
      },
      [days, ...series.map((s) => s.data)],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [series, height]);
  if (series.length === 0) return <p className="muted">No data in this range.</p>;
  return (
    <figure className="chart" aria-label="Trends chart">
      <div ref={box} />
      <figcaption className="sr-only">
        {series.map((s) => `${seriesName(s)}: ${s.count} in total`).join('; ')}
      </figcaption>
    </figure>
  );
}

export function FunnelBars({ steps }: { steps: FunnelStep[] }) {
  const first = steps[0]?.count ?? 0;
  if (steps.length === 0) return <p className="muted">No data in this range.</p>;
  return (
    <ol className="funnel" aria-label="Funnel">
      {steps.map((s) => {
        const share = first ? s.count / first : 0;
        return (
          <li key={s.order}>
            <div className="funnel-label">
              <span>{s.custom_name ?? s.name}</span>
              <span className="muted">
                {s.count} ({Math.round(share * 1000) / 10}%)
              </span>
            </div>
            <div className="funnel-bar" style={{ width: `${Math.max(share * 100, 0.5)}%` }} />
          </li>
        );
      })}
    </ol>
  );
}

export function RetentionTable({ rows }: { rows: RetentionRow[] }) {
  if (rows.length === 0) return <p className="muted">No data in this range.</p>;
  const width = Math.max(...rows.map((r) => r.values.length));
  return (
    <table className="table retention" aria-label="Retention">
      <thead>
        <tr>
          <th scope="col">Cohort</th>
          {Array.from({ length: width }, (_, k) => (
            <th scope="col" key={k}>
              {k === 0 ? 'Size' : `+${k}`}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => {
          const size = r.values[0]?.count ?? 0;
          return (
            <tr key={r.date}>
              <th scope="row">{new Date(r.date).toLocaleDateString()}</th>
              {r.values.map((v, k) => (
                <td
                  key={k}
                  style={{
                    background: k && size ? `rgba(59, 91, 219, ${(v.count / size) * 0.6})` : undefined,
                  }}
                >
                  {k === 0 ? v.count : size ? `${Math.round((v.count / size) * 100)}%` : '–'}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Draws an answer by its query's kind (a saved insight's `source`). */
export function AnswerView({ kind, results }: { kind: string; results: unknown }) {
  if (!Array.isArray(results)) return <p className="muted">Not computed yet.</p>;
  if (kind === 'FunnelsQuery') return <FunnelBars steps={results as FunnelStep[]} />;
  if (kind === 'RetentionQuery') return <RetentionTable rows={results as RetentionRow[]} />;
  return <TrendsChart series={results as TrendSeries[]} />;
}
