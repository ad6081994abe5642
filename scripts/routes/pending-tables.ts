// Stand-ins for route tables that have not landed yet: the paths decide serves today, so that
// `pnpm routes` routes every service while decide moves onto a table of its own (issue 20). The generator uses `services/<name>/src/routes.ts` as soon as
// it exists and these no longer; delete each stand-in when its table has landed.
import type { AnyRoute, HttpMethod, RouteTable } from '@sett/http';

export interface PendingTable {
  table: RouteTable<unknown>;
  /** Where its paths were read from (named in docs/compatibility.md). */
  source: string;
}

function declaration(method: HttpMethod, url: string, summary: string): AnyRoute<unknown> {
  return {
    method,
    url,
    summary,
    tag: 'pending',
    auth: { kind: 'none' },
    schema: {},
    handler: () => undefined,
  };
}

/** decide's paths (its Express routers, fast path and hand matchers). */
export function pendingDecideTable(): PendingTable {
  const get = (url: string, summary: string) => declaration('GET', url, summary);
  const post = (url: string, summary: string) => declaration('POST', url, summary);
  return {
    source: "decide's Express routers and hand matchers",
    table: {
      service: 'decide',
      routes: [
        post('/decide/', 'Flags and settings for an SDK'),
        post('/flags/', 'Flag evaluation'),
        get('/flags/definitions', 'Flag definitions for local evaluation'),
        get('/api/feature_flag/local_evaluation', 'Flag definitions for local evaluation'),
        get('/api/early_access_features/', 'Early access features by project token'),
        get('/api/surveys/', 'Surveys by project token (always empty)'),
        get('/api/web_experiments/', 'Web experiments by project token (always empty)'),
        get('/api/product_tours/', 'Product tours by project token (always empty)'),
        get('/array/:token/config', 'Remote config'),
        get('/array/:token/config.js', 'Remote config script'),
        get('/static/:name', 'posthog-js files'),
        get('/static/:version/:name', 'posthog-js files of a version'),
      ],
    },
  };
}
