// Distinct ids from a static cohort CSV upload, read as PostHog reads one: the first non-empty
// row decides the format. A single column is a list of distinct ids (a `distinct_id` /
// `distinct-id` header is skipped; PostHog would take it as an id). Several columns need a
// `distinct_id` / `distinct-id` header; rows too short for that column are skipped. Values are
// trimmed, empty ones skipped, duplicates kept once. Sett stores members by distinct id, so a
// CSV of person ids or e-mails only (PostHog resolves those) is refused. A value holding NUL,
// or longer than MAX_DISTINCT_ID_LENGTH, is refused naming its line. Pure.
import { ValidationError } from '@sett/http';
import { MAX_DISTINCT_ID_LENGTH } from './cohort-schemas';

const DISTINCT_ID_HEADERS = new Set(['distinct_id', 'distinct-id']);
const OTHER_ID_HEADERS = new Set(['person_id', 'person-id', 'person .id', 'email', 'e-mail']);

const refuse = (detail: string): never => {
  throw new ValidationError(detail, 'csv', 'invalid_input');
};

/**
 * RFC 4180 records with the physical line each starts on. Quoted fields may hold commas, quotes
 * ("") and line breaks; CRLF, LF and CR end a record.
 */
export function* csvRecords(text: string): Generator<{ line: number; fields: string[] }> {
  let i = 0;
  let line = 1;
  const n = text.length;
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    let field = '';
    let inQuotes = false;
    let quoted = false;
    for (; i < n; i++) {
      const c = text[i];
      if (inQuotes) {
        if (c === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i++;
          } else inQuotes = false;
        } else {
          if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line++;
          field += c;
        }
      } else if (c === '"' && !quoted && field.trim() === '') {
        inQuotes = true;
        quoted = true;
        field = '';
      } else if (c === ',') {
        fields.push(field);
        field = '';
        quoted = false;
      } else if (c === '\n' || c === '\r') {
        if (c === '\r' && text[i + 1] === '\n') i++;
        i++;
        line++;
        break;
      } else field += c;
    }
    if (inQuotes) refuse(`Line ${start}: a quoted value is not closed.`);
    fields.push(field);
    yield { line: start, fields };
  }
}

/** The distinct ids of a CSV file (bytes as uploaded). */
export function distinctIdsFromCsv(bytes: Buffer): string[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return refuse('CSV file encoding is not supported. Please save your file as UTF-8 and try again.');
  }
  const records = csvRecords(text);
  // Not a for-of with break: that would close the generator for the loop below.
  let first: { line: number; fields: string[] } | undefined;
  for (let next = records.next(); !next.done; next = records.next()) {
    if (next.value.fields.some((f) => f.trim() !== '')) {
      first = next.value;
      break;
    }
  }
  if (!first) return refuse('CSV file is empty. Please upload a CSV file with at least one row of data.');

  const ids = new Set<string>();
  const add = (raw: string, line: number) => {
    const id = raw.trim();
    if (id === '') return;
    if (id.includes('\u0000')) refuse(`Line ${line}: the distinct id holds a NUL character.`);
    if (id.length > MAX_DISTINCT_ID_LENGTH)
      refuse(`Line ${line}: the distinct id is longer than ${MAX_DISTINCT_ID_LENGTH} characters.`);
    ids.add(id);
  };

  const headers = first.fields.map((h) => h.trim().toLowerCase());
  let column = 0;
  if (first.fields.filter((f) => f.trim() !== '').length <= 1) {
    const header = headers.find((h) => h !== '') ?? '';
    column = headers.indexOf(header);
    if (OTHER_ID_HEADERS.has(header))
      refuse('Sett stores static cohort members by distinct id: upload a column of distinct ids.');
    if (!DISTINCT_ID_HEADERS.has(header)) add(first.fields[column] ?? '', first.line);
  } else {
    column = headers.findIndex((h) => DISTINCT_ID_HEADERS.has(h));
    if (column < 0)
      refuse(
        `A CSV with several columns must have a 'distinct_id' or 'distinct-id' column. Found columns: ${first.fields
          .filter((f) => f.trim() !== '')
          .join(', ')
          .slice(0, 500)}`,
      );
  }
  for (let next = records.next(); !next.done; next = records.next())
    if (next.value.fields.length > column) add(next.value.fields[column]!, next.value.line);
  if (ids.size === 0)
    refuse('CSV file contains no distinct ids. Please ensure your file has data rows with distinct ids.');
  return [...ids];
}
