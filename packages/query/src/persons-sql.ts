// Who an event counts as, in SQL, for every kind: its distinct id's current person (through the
// unique index on person_distinct_ids (team_id, distinct_id)), else the distinct id itself. The
// person's internal id is enough to tell persons apart (every mapping row has its person: the
// foreign key cascades), so persons itself is joined only when a query reads person properties.
export const IDENTITY_JOIN = `LEFT JOIN person_distinct_ids pdi ON pdi.team_id = e.team_id AND pdi.distinct_id = e.distinct_id`;
export const PROPERTIES_JOIN = `LEFT JOIN persons p ON p.id = pdi.person_id`;
/** One text per person: `<id>` of a person, `d:<distinct id>` of an id with no person. */
export const PERSON_KEY = `coalesce(pdi.person_id::text, 'd:' || e.distinct_id)`;
export const PERSON_PROPERTIES = `COALESCE(p.properties, '{}'::jsonb)`;

/** The joins a statement needs: the mapping for who, and persons too for their properties. */
export function personJoins(need: { identity: boolean; properties: boolean }): string {
  if (need.properties) return `${IDENTITY_JOIN} ${PROPERTIES_JOIN}`;
  return need.identity ? IDENTITY_JOIN : '';
}

/** Whether any of the filter groups reads person properties (then persons must be joined). */
export function filtersReadPersons(groups: unknown[]): boolean {
  return JSON.stringify(groups).includes('"type":"person"');
}
