// The OpenAPI 3.1 document GET /api/schema/ serves: every route of every Sett service, generated
// from their route tables (@sett/http's buildOpenApi). Adding a service's table here is the one
// change that documents it.
import { captureRoutes } from '@sett/capture';
import { decideRoutes } from '@sett/decide';
import { buildOpenApi, type RouteTable } from '@sett/http';
import { SCOPES } from '@sett/keys';
import { managementRoutes } from '../routes';

export const API_TABLES: readonly RouteTable<unknown>[] = [
  managementRoutes as RouteTable<unknown>,
  captureRoutes as RouteTable<unknown>,
  decideRoutes as RouteTable<unknown>,
];

export function buildApiDocument(serverUrl?: string): object {
  return buildOpenApi(API_TABLES, {
    title: 'Sett API',
    version: '1.0.0',
    description:
      'PostHog-compatible API of every Sett service. The management API (/api/...) takes ' +
      '`Authorization: Bearer <personal API key>`; each operation lists the scope it needs ' +
      `(scopes: ${[...SCOPES, '*'].join(', ')}). Capture and the SDK endpoints take the public project API key.`,
    serverUrl,
  });
}
