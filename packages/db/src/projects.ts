// The project (team) of a public project API key: the one query capture, decide and ingestion
// make when a token is in neither their local cache nor Redis (teams.api_token is unique). A
// deleted project (deleted_at set, awaiting its purge) has no token any more.

export interface SqlRunner {
  query(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

export async function findProjectByToken(
  db: SqlRunner,
  token: string,
): Promise<{ teamId: number; organizationId: string } | null> {
  const { rows } = await db.query(
    'SELECT id, organization_id FROM teams WHERE api_token = $1 AND deleted_at IS NULL',
    [token],
  );
  const row = rows[0] as { id: number; organization_id: string } | undefined;
  return row ? { teamId: row.id, organizationId: row.organization_id } : null;
}
