// The endpoint table of docs/interface.md: every route the services declare, grouped by service,
// with who may call it (no credentials, the project API key, a personal API key and its scope, or
// the project's secret key) and the one-line summary of its declaration. Written between the
// ROUTES markers by `pnpm routes`, so the page cannot list a route that is not served, or miss one.
import type { AnyRoute, RouteAuth, RouteTable } from '@sett/http';

const SERVICE_TITLES: Record<string, string> = {
  capture: 'Capture (SDKs, project API key)',
  decide: 'Flags and SDK configuration (SDKs, project API key)',
  management: 'Management API (personal API keys)',
};

export function describeAuth(auth: RouteAuth): string {
  switch (auth.kind) {
    case 'none':
      return 'none';
    case 'project_token':
      return `project API key (in the ${auth.in})`;
    case 'personal_key':
      return auth.scope === null ? 'personal API key (any scope)' : `personal API key, \`${auth.scope}\``;
    case 'personal_or_secret_key':
      return `personal API key, \`${auth.scope}\`, or the project secret key`;
  }
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function paths(r: AnyRoute<unknown>): string {
  return [r.url, ...(r.aliases ?? [])].map((u) => `\`${u}\``).join(', ');
}

export function renderInterfaceTable(tables: Array<RouteTable<unknown>>): string {
  const out: string[] = [];
  for (const table of tables) {
    const routes = table.routes.filter((r) => !r.hidden);
    out.push(`### ${SERVICE_TITLES[table.service] ?? table.service}`, '');
    out.push(`${routes.length} routes, declared in \`services/${table.service}/src/routes.ts\`.`, '');
    out.push('| method | path | credentials | what it does |', '|---|---|---|---|');
    for (const r of routes)
      out.push(`| ${r.method} | ${cell(paths(r))} | ${cell(describeAuth(r.auth))} | ${cell(r.summary)} |`);
    out.push('');
  }
  return out.join('\n');
}
