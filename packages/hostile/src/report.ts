// The per-class count table printed after a run: cases sent per class and service, and the
// status classes they got (2xx, 4xx, 5xx, no answer).
import { CASE_CLASSES, type HostileCase, type Service } from './corpus';
import type { Outcome } from './send';

type Row = { sent: number; s2xx: number; s4xx: number; s5xx: number; other: number; failed: number };

export function countTable(
  cases: HostileCase[],
  outcomes: Map<string, Outcome>,
  failed: Set<string>,
): string {
  const rows = new Map<string, Row>();
  const row = (key: string) => {
    let r = rows.get(key);
    if (!r) rows.set(key, (r = { sent: 0, s2xx: 0, s4xx: 0, s5xx: 0, other: 0, failed: 0 }));
    return r;
  };
  const services: Service[] = ['capture', 'decide', 'management'];
  for (const c of cases) {
    const o = outcomes.get(c.name);
    for (const r of [
      row(`${c.cls}|${c.service}`),
      row(`${c.cls}|all`),
      row(`all|${c.service}`),
      row('all|all'),
    ]) {
      r.sent++;
      const s = o?.status;
      if (s !== undefined && s >= 200 && s < 300) r.s2xx++;
      else if (s !== undefined && s >= 400 && s < 500) r.s4xx++;
      else if (s !== undefined && s >= 500) r.s5xx++;
      else r.other++;
      if (failed.has(c.name)) r.failed++;
    }
  }
  const header = ['class', 'service', 'sent', '2xx', '4xx', '5xx', 'none/other', 'failed'];
  const lines = [header];
  for (const cls of [...CASE_CLASSES, 'all']) {
    for (const svc of [...services, 'all']) {
      const r = rows.get(`${cls}|${svc}`);
      if (!r) continue;
      lines.push([cls, svc, r.sent, r.s2xx, r.s4xx, r.s5xx, r.other, r.failed].map(String));
    }
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) => l.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n');
}
