// Every route management serves, one declaration each: method, path, who may call it (a
// personal API key and the scope it needs), the schemas of what comes in and what goes out, and
// a handler that calls into the feature's service. Each feature folder declares its own block
// (`<feature>/<feature>-routes.ts`); this file only assembles them. Dispatch, 405s, the scope
// check, validation, CORS, metrics labels and the OpenAPI document are derived from the table
// (@sett/http's route mechanism; docs/architecture.md, "HTTP routes"). A new feature lands in a
// folder of its own and adds its block here. Every project route is served under
// /api/environments/:project_id/ as well (withEnvironmentPaths).
import type { AnyRoute, RouteTable } from '@sett/http';
import { userRoutes } from './users/user-routes';
import { projectRoutes } from './projects/project-routes';
import { organizationRoutes } from './organizations/organization-routes';
import { earlyAccessFeatureRoutes } from './early-access-features/early-access-feature-routes';
import { featureFlagRoutes } from './feature-flags/feature-flag-routes';
import { cohortRoutes } from './cohorts/cohort-routes';
import { eventRoutes } from './events/event-routes';
import { queryRoutes } from './query/query-routes';
import { definitionRoutes } from './definitions/definition-routes';
import { groupRoutes } from './groups/group-routes';
import { insightRoutes } from './insights/insight-routes';
import { dashboardRoutes } from './dashboards/dashboard-routes';
import { annotationRoutes } from './annotations/annotation-routes';
import { personRoutes } from './persons/person-routes';
import { personalApiKeyRoutes } from './personal-api-keys/personal-api-key-routes';
import { schemaRoutes } from './openapi/schema-routes';
import { sessionRoutes } from './sessions/session-routes';
import { consoleRoutes } from './console/console-routes';
import { inviteRoutes } from './invites/invite-routes';
import type { ManagementRouteDeps } from './route-deps';

const PROJECT_PATH = '/api/projects/:project_id';
const ENVIRONMENT_PATH = '/api/environments/:project_id';

/**
 * PostHog serves its project-level endpoints under /api/environments/:id/ too (an environment
 * is its project here), and its newer clients call them there: every project route answers
 * both paths, from its one declaration.
 */
function withEnvironmentPaths(routes: AnyRoute<ManagementRouteDeps>[]): AnyRoute<ManagementRouteDeps>[] {
  return routes.map((route) =>
    route.url.startsWith(`${PROJECT_PATH}/`)
      ? {
          ...route,
          aliases: [...(route.aliases ?? []), ENVIRONMENT_PATH + route.url.slice(PROJECT_PATH.length)],
        }
      : route,
  );
}

export const managementRoutes: RouteTable<ManagementRouteDeps> = {
  service: 'management',
  routes: withEnvironmentPaths([
    ...userRoutes,
    ...projectRoutes,
    ...organizationRoutes,
    ...earlyAccessFeatureRoutes,
    ...featureFlagRoutes,
    ...cohortRoutes,
    ...eventRoutes,
    ...queryRoutes,
    ...definitionRoutes,
    ...groupRoutes,
    ...insightRoutes,
    ...dashboardRoutes,
    ...annotationRoutes,
    ...personRoutes,
    ...personalApiKeyRoutes,
    ...schemaRoutes,
    ...sessionRoutes,
    ...inviteRoutes,
    ...consoleRoutes,
  ]),
};
