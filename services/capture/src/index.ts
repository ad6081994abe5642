// What other packages may read of capture: its route table (the OpenAPI document and the proxy
// configurations are generated from every service's table).
export { captureRoutes } from './routes';
export type { CaptureRouteDeps } from './routes';
