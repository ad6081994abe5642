// The route of the OpenAPI document.
import { r } from '../route-kit';

export const schemaRoutes = [
  r({
    method: 'GET',
    url: '/api/schema/',
    summary: 'This OpenAPI 3.1 document: every route of every Sett service',
    description: 'Public, so that client generators can fetch it without a key.',
    tag: 'schema',
    auth: { kind: 'none' },
    schema: { response: { 200: { type: 'object', required: ['openapi', 'paths'] } } },
    handler: (_ctx, d) => d.openApiDocument(),
  }),
];
