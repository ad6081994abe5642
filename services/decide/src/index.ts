// What other packages may read of decide: its route table (the OpenAPI document management serves
// and the proxy configurations are generated from every service's table).
export { decideRoutes } from './routes';
export type { DecideRouteDeps } from './routes';
