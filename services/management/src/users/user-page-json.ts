// The users list page as JSON text, with each distinct nested organization and team written
// once: every user of a page usually shares one current organization (with all its projects),
// which is most of the bytes, and JSON.stringify would write it out anew for each of them. The
// list route answers this text as a SerializedJson (the same text JSON.stringify would write).
import type { UserJson } from './user-views';

// A NUL cannot occur in stored text (Postgres refuses it, the input rules too), so a string
// starting with one is a safe placeholder in the JSON text.
const PLACEHOLDER_RE = /"\\u0000(\d+)"/g;

export function stringifyPage(envelope: object, results: readonly UserJson[]): string {
  const shared: string[] = [];
  const index = new Map<object, number>();
  const slot = (value: object | null): unknown => {
    if (value === null) return null;
    let i = index.get(value);
    if (i === undefined) {
      i = shared.push(JSON.stringify(value)) - 1;
      index.set(value, i);
    }
    return `\u0000${i}`;
  };
  const users = results.map((u) => ({ ...u, team: slot(u.team), organization: slot(u.organization) }));
  const text = JSON.stringify({ ...envelope, results: users });
  return text.replace(PLACEHOLDER_RE, (_m, i: string) => shared[Number(i)]!);
}
