// Headless Debian Chromium (never a downloaded browser) driven by playwright-core, and a small
// web site of another origin (http://localhost:<port>, while the edge is http://127.0.0.1:<port>)
// whose pages install posthog-js the ways users do: the npm bundle, or PostHog's standard HTML
// snippet, which loads <api_host>/static/array.js from Sett itself.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SETT_CHROMIUM || '/usr/bin/chromium';

/** A desktop Chrome user agent: posthog-js drops events from user agents it takes for bots. */
const USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/setup.sh (installs Debian's chromium)`);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    userAgent: USER_AGENT,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // navigator.webdriver = true makes posthog-js treat the visitor as a bot and drop events.
      '--disable-blink-features=AutomationControlled',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** posthog-js builds served by the test site, from this package's node_modules. */
const BUNDLES: Record<string, string> = {
  current: path.join(__dirname, '..', 'node_modules', 'posthog-js'),
  v1251: path.join(__dirname, '..', 'node_modules', 'posthog-js-1251'),
};

export type Install = 'npm' | 'snippet' | 'npm-1.251';

/** PostHog's standard HTML snippet, as the install docs give it (it loads /static/array.js). */
const SNIPPET = `!function(t,e){var o,n,p,r;e.__SV||(window.posthog && window.posthog.__loaded)||(window.posthog=e,e._i=[],e.init=function(i,s,a){function g(t,e){var o=e.split(".");2==o.length&&(t=t[o[0]],e=o[1]),t[e]=function(){t.push([e].concat(Array.prototype.slice.call(arguments,0)))}}(p=t.createElement("script")).type="text/javascript",p.crossOrigin="anonymous",p.async=!0,p.src=s.api_host.replace(".i.posthog.com","-assets.i.posthog.com")+"/static/array.js",(r=t.getElementsByTagName("script")[0]).parentNode.insertBefore(p,r);var u=e;for(void 0!==a?u=e[a]=[]:a="posthog",u.people=u.people||[],u.toString=function(t){var e="posthog";return"posthog"!==a&&(e+="."+a),t||(e+=" (stub)"),e},u.people.toString=function(){return u.toString(1)+".people (stub)"},o="init capture register register_once register_for_session unregister unregister_for_session getFeatureFlag getFeatureFlagPayload isFeatureEnabled reloadFeatureFlags updateEarlyAccessFeatureEnrollment getEarlyAccessFeatures on onFeatureFlags onSurveysLoaded onSessionId getSurveys getActiveMatchingSurveys renderSurvey canRenderSurvey canRenderSurveyAsync identify setPersonProperties group resetGroups setPersonPropertiesForFlags resetPersonPropertiesForFlags setGroupPropertiesForFlags resetGroupPropertiesForFlags reset get_distinct_id getGroups get_session_id get_session_replay_url alias set_config startSessionRecording stopSessionRecording sessionRecordingStarted captureException loadToolbar get_property getSessionProperty createPersonProfile opt_in_capturing opt_out_capturing has_opted_in_capturing has_opted_out_capturing clear_opt_in_out_capturing debug getPageViewId captureTraceFeedback captureTraceMetric".split(" "),n=0;n<o.length;n++)g(u,o[n]);e._i.push([i,s,a])},e.__SV=1)}(document,window.posthog||[]);`;

/** Page-side hooks: every flags load is recorded with the distinct id it was for. */
const HOOKS = `
window.__flagLoads = [];
window.__settLoaded = function (ph) {
  ph.onFeatureFlags(function (flags, variants) {
    window.__flagLoads.push({ distinctId: ph.get_distinct_id(), variants: variants });
  });
  window.__phLoaded = true;
};`;

function page(install: Install, token: string, apiHost: string): string {
  const options =
    install === 'snippet'
      ? `{ api_host: ${JSON.stringify(apiHost)}, person_profiles: 'identified_only', persistence: 'localStorage+cookie', loaded: window.__settLoaded }`
      : `{ api_host: ${JSON.stringify(apiHost)}, persistence: 'memory', request_batching: false, loaded: window.__settLoaded }`;
  const loader =
    install === 'snippet'
      ? `<script>${SNIPPET}\nposthog.init(${JSON.stringify(token)}, ${options});</script>`
      : `<script src="/vendor/${install === 'npm' ? 'current' : 'v1251'}/dist/array.full.js"></script>
<script>posthog.init(${JSON.stringify(token)}, ${options});</script>`;
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Sett SDK test (${install})</title>
<link rel="icon" href="data:,">
<script>${HOOKS}</script>
${loader}
</head>
<body><h1>Shop</h1><button id="buy" class="cta">Buy now</button></body></html>`;
}

export interface Site {
  /** http://localhost:<port>: another origin than the edge's http://127.0.0.1:<port>. */
  origin: string;
  url(install: Install): string;
  close(): Promise<void>;
}

export async function startSite(token: string, apiHost: string): Promise<Site> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = /^\/(npm|snippet|npm-1\.251)\.html$/.exec(url.pathname);
    if (m) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(page(m[1] as Install, token, apiHost));
      return;
    }
    const v = /^\/vendor\/(current|v1251)\/dist\/([\w.-]+\.js)$/.exec(url.pathname);
    if (v) {
      const file = path.join(BUNDLES[v[1]!]!, 'dist', v[2]!);
      if (fs.existsSync(file)) {
        res.writeHead(200, { 'content-type': 'application/javascript; charset=utf-8' });
        fs.createReadStream(file).pipe(res);
        return;
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const origin = `http://localhost:${port}`;
  return {
    origin,
    url: (install) => `${origin}/${install}.html`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface PageRequest {
  method: string;
  url: string;
  status: number | string;
  requestBody?: string;
  responseBody?: string;
}

/** Every request the page makes, and the failed ones in full (network errors and status >= 400). */
export function watchPage(p: Page): { all: PageRequest[]; failed: PageRequest[]; errors: string[] } {
  const all: PageRequest[] = [];
  const failed: PageRequest[] = [];
  const errors: string[] = [];
  p.on('response', (res) => {
    const req = res.request();
    const entry: PageRequest = { method: req.method(), url: req.url(), status: res.status() };
    all.push(entry);
    if (res.status() >= 400) {
      entry.requestBody = req.postData()?.slice(0, 500) ?? undefined;
      failed.push(entry);
      res
        .text()
        .then((t) => (entry.responseBody = t.slice(0, 600)))
        .catch(() => undefined);
    }
  });
  p.on('requestfailed', (req) => {
    const entry: PageRequest = {
      method: req.method(),
      url: req.url(),
      status: `failed: ${req.failure()?.errorText ?? '?'}`,
    };
    all.push(entry);
    failed.push(entry);
  });
  p.on('pageerror', (err) => errors.push(err.message));
  return { all, failed, errors };
}

export function describePageRequest(r: PageRequest): string {
  const body = r.requestBody ? ` body=${r.requestBody}` : '';
  const answer = r.responseBody ? ` -> ${r.responseBody}` : '';
  return `${r.method} ${r.url}${body} => ${r.status}${answer}`;
}
