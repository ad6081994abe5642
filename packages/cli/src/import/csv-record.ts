// CSV records (RFC 4180: comma separated, double quotes, "" for a quote inside quotes) and the
// header mapping to a PostHog-shaped event: `event`, `distinct_id`, `timestamp`, `uuid`, and
// `properties.<name>` / `$set.<name>` / `$set_once.<name>` columns. Empty cells are left out;
// values stay strings. Pure.

/** Splits one record (which may hold quoted line breaks) into fields, or returns an error. */
export function parseCsvFields(text: string): string[] | string {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q === -1) return 'a quoted field is not closed';
        value += text.slice(i, q);
        if (text[q + 1] === '"') {
          value += '"';
          i = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      fields.push(value);
      if (i === text.length) return fields;
      if (text[i] !== ',') return `unexpected text after a quoted field at column ${fields.length}`;
      i++;
    } else {
      const c = text.indexOf(',', i);
      if (c === -1) {
        fields.push(text.slice(i));
        return fields;
      }
      fields.push(text.slice(i, c));
      i = c + 1;
    }
  }
}

const TOP = new Set(['event', 'distinct_id', 'timestamp', 'uuid']);
const NESTED = ['properties', '$set', '$set_once'] as const;

export type CsvHeader = string[];

/** Checks a header row: it must name event, distinct_id and timestamp columns. */
export function parseCsvHeader(text: string): CsvHeader | string {
  const fields = parseCsvFields(text);
  if (typeof fields === 'string') return `CSV header: ${fields}`;
  const header = fields.map((f) => f.trim());
  for (const required of ['event', 'distinct_id', 'timestamp'])
    if (!header.includes(required)) return `CSV header has no "${required}" column`;
  return header;
}

/** One CSV record as the object a PostHog JSON line would hold. */
export function csvToEvent(header: CsvHeader, text: string): Record<string, unknown> | string {
  const fields = parseCsvFields(text);
  if (typeof fields === 'string') return fields;
  if (fields.length !== header.length) return `has ${fields.length} fields, the header has ${header.length}`;
  const event: Record<string, unknown> = { properties: {} };
  header.forEach((name, i) => {
    const value = fields[i]!;
    if (value === '') return;
    if (TOP.has(name)) {
      event[name] = value;
      return;
    }
    const nested = NESTED.find((n) => name.startsWith(`${n}.`));
    const key = nested ? name.slice(nested.length + 1) : name;
    const target = nested ?? 'properties';
    const obj = (event[target] ??= {}) as Record<string, unknown>;
    // defineProperty: a column named `properties.__proto__` must be a property, not a prototype.
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  });
  return event;
}
