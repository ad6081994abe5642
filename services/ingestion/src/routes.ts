// Ingestion serves no API: its HTTP port answers only the operational routes every service has
// (/_health, /_ready with the consumers' and Postgres's state, /_metrics), which the route
// mechanism adds to any table. The table is empty, and the edge routes nothing to ingestion.
import type { RouteTable } from '@sett/http';

export const ingestionRoutes: RouteTable<Record<string, never>> = { service: 'ingestion', routes: [] };
