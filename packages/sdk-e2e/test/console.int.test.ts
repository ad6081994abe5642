// The web console in headless Chromium against the whole stack as `npm start` brings it up (it
// builds the console and serves it at `/` through the edge): sign in with the password start.ts
// made for the first user, see an event sent through capture arrive in Live events and filter
// it, log out; then turn two-factor authentication on and sign in with a TOTP code. Each page is
// saved as a screenshot under test-output/console/ at 1280 and 390 pixels wide.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { launchChromium, startSettStack, waitFor, type Browser, type SettStack } from '../src';

jest.setTimeout(180_000);

/** The page's cookies, read inside page.evaluate (this file is compiled without the DOM types). */
declare const document: { cookie: string };

const SHOTS = path.resolve(__dirname, '../../../test-output/console');

let stack: SettStack;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

async function shot(name: string) {
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

async function signIn(email: string, password: string) {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

beforeAll(async () => {
  [stack, browser] = await Promise.all([startSettStack(), launchChromium()]);
  page = await browser.context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) pageErrors.push(m.text());
  });
  await page.setViewportSize({ width: 1280, height: 800 });
}, 200_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

it('serves the console at / through the edge, within its bundle budget', async () => {
  const res = await fetch(`${stack.edgeUrl}/`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/text\/html/);
  expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
  const html = await res.text();
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  expect(script).toBeDefined();
  const js = await fetch(`${stack.edgeUrl}${script}`, { headers: { 'accept-encoding': 'gzip' } });
  expect(js.headers.get('cache-control')).toMatch(/immutable/);
  // fetch decodes gzip: the length on the wire is the header's.
  expect(Number(js.headers.get('content-length'))).toBeLessThan(250 * 1024);
});

it('refuses a wrong password in plain words, then signs in', async () => {
  await page.goto(`${stack.edgeUrl}/`);
  await page.getByRole('heading', { name: 'Sign in to Sett' }).waitFor();
  await shot('sign-in');
  await signIn(stack.consoleEmail, 'not the password');
  await page.getByRole('alert').waitFor();
  expect(await page.getByRole('alert').innerText()).toMatch(/Invalid email or password/);
  await signIn(stack.consoleEmail, stack.consolePassword);
  await page.getByRole('heading', { name: 'Live events' }).waitFor();
});

it('shows an event sent through capture in Live events, and filters by name', async () => {
  const name = `console_check_${randomUUID().slice(0, 8)}`;
  const sent = await fetch(`${stack.edgeUrl}/i/v0/e/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      api_key: stack.projectKey,
      event: name,
      distinct_id: 'console-visitor',
      properties: { $current_url: 'https://example.com/pricing' },
    }),
  });
  expect(sent.status).toBe(200);
  // The page refreshes itself: the event shows up without a reload.
  await page.getByRole('cell', { name }).waitFor({ timeout: 60_000 });
  expect(await page.getByRole('cell', { name: 'https://example.com/pricing' }).first().isVisible()).toBe(
    true,
  );
  await shot('live-events');

  await page.getByLabel('Event name').fill('no_such_event_name');
  await page.getByText('No events match yet.').waitFor();
  await page.getByLabel('Event name').fill(name);
  await page.getByRole('cell', { name }).waitFor();
  expect(await page.locator('tbody tr').count()).toBe(1);
});

const flagKey = `console-flag-${randomUUID().slice(0, 8)}`;

/** Whether decide serves the flag on for a distinct id, as an SDK asks (`/flags?v=2`). */
async function decideServes(key: string, distinctId: string): Promise<boolean | undefined> {
  const answer = (await (
    await fetch(`${stack.edgeUrl}/flags/?v=2`, {
      method: 'POST',
      body: JSON.stringify({ api_key: stack.projectKey, distinct_id: distinctId }),
    })
  ).json()) as { flags: Record<string, { enabled: boolean }> };
  return answer.flags[key]?.enabled;
}

it('creates a flag, sees decide serve it, and turns it off', async () => {
  const key = flagKey;
  await page.getByRole('link', { name: 'Feature flags' }).click();
  await page.getByRole('heading', { name: 'Feature flags' }).waitFor();
  await page.getByRole('button', { name: 'New flag' }).click();
  await page.getByLabel('Key').fill(key);
  await page.getByLabel('Rollout %').fill('100');
  await page.getByRole('button', { name: 'Create flag' }).click();
  await page.getByRole('cell', { name: key, exact: true }).waitFor();

  // "Test for a distinct id" asks decide itself; so does an SDK.
  await page.getByRole('textbox', { name: 'Distinct id', exact: true }).fill('console-visitor');
  await page.getByRole('button', { name: 'Evaluate' }).click();
  const values = page.getByRole('table', { name: 'Flag values' });
  await values.getByRole('cell', { name: key, exact: true }).waitFor();
  expect(await values.getByRole('row', { name: new RegExp(key) }).innerText()).toMatch(/true/);
  const decide = async () =>
    (
      (await (
        await fetch(`${stack.edgeUrl}/flags/?v=2`, {
          method: 'POST',
          body: JSON.stringify({ api_key: stack.projectKey, distinct_id: 'console-visitor' }),
        })
      ).json()) as { flags: Record<string, { enabled: boolean }> }
    ).flags[key]?.enabled;
  expect(await decide()).toBe(true);
  await shot('flags');

  await page.getByRole('switch', { name: `${key} active` }).click();
  await waitFor('decide to serve the flag off', async () => (await decide()) !== true);
});

it('builds a trends chart with a breakdown, saves it to a new dashboard, and shows it there', async () => {
  const events = [
    ['trend-a', '$pageview', 'Chrome'],
    ['trend-b', '$pageview', 'Firefox'],
    ['trend-c', '$pageview', 'Chrome'],
    ['trend-a', 'signed_up', 'Chrome'],
  ];
  const sent = await fetch(`${stack.edgeUrl}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      api_key: stack.projectKey,
      batch: events.map(([distinct_id, event, $browser]) => ({
        event,
        distinct_id,
        properties: { $browser },
      })),
    }),
  });
  expect(sent.status).toBe(200);
  await waitFor(
    'the events to be stored',
    async () => {
      const { rows } = await stack.pool.query(
        `SELECT count(*)::int AS n FROM events WHERE team_id = $1 AND distinct_id LIKE 'trend-%'`,
        [stack.projectId],
      );
      return rows[0].n === events.length;
    },
    60_000,
  );

  await page.getByRole('link', { name: 'Insights' }).click();
  await page.getByRole('heading', { name: 'New insight' }).waitFor();
  await page.getByLabel('Events', { exact: true }).fill('$pageview');
  await page.getByLabel('Breakdown by property').fill('$browser');
  await page.getByRole('button', { name: 'Run' }).click();
  const chart = page.getByRole('figure', { name: 'Trends chart' });
  await chart.locator('canvas').waitFor();
  // One line per browser, with their totals.
  const caption = await chart.locator('figcaption').innerText();
  expect(caption).toMatch(/Chrome: 2 in total/);
  expect(caption).toMatch(/Firefox: 1 in total/);
  await page.getByLabel('Name').fill('Pageviews by browser');
  await page.getByLabel('Add to dashboard').selectOption('new');
  await page.getByLabel('Dashboard name').fill('Traffic');
  await page.getByRole('button', { name: 'Save insight' }).click();
  await page
    .getByRole('status')
    .getByText(/Saved as/)
    .waitFor();
  await shot('insights');

  await page.getByRole('link', { name: 'its dashboard' }).click();
  await page.getByRole('heading', { name: 'Traffic' }).waitFor();
  const tile = page.getByRole('article', { name: 'Pageviews by browser' });
  await tile.locator('canvas').waitFor();
  await shot('dashboard');

  // A funnel from the same page: bars per step.
  await page.getByRole('link', { name: 'Insights' }).click();
  await page.getByLabel('Kind').selectOption('FunnelsQuery');
  await page.getByLabel('Steps (events, in order)').fill('$pageview, signed_up');
  await page.getByRole('button', { name: 'Run' }).click();
  const funnel = page.getByRole('list', { name: 'Funnel' });
  await funnel.waitFor();
  expect(await funnel.innerText()).toMatch(/\$pageview\s+3 \(100%\)[\s\S]*signed_up\s+1 \(33\.3%\)/);
});

it('finds a person and deletes them, after a confirmation, showing the deletion job', async () => {
  await waitFor(
    'the visitor to be a person',
    async () => {
      const { rows } = await stack.pool.query(
        `SELECT 1 FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = 'console-visitor'`,
        [stack.projectId],
      );
      return rows.length > 0;
    },
    60_000,
  );
  await page.getByRole('link', { name: 'Persons' }).click();
  await page.getByLabel('Search').fill('console-visitor');
  await page.getByRole('list', { name: 'Persons' }).getByRole('button').first().click();
  await page.getByText('Distinct ids: console-visitor').waitFor();
  await shot('persons');
  await page.getByRole('button', { name: 'Delete person…' }).click();
  await page.getByRole('button', { name: 'Yes, delete' }).click();
  // The person and their ids go at once; the job's last sweep comes later (PERSON_DELETION_SETTLE_MS).
  await page.getByText(/Deletion #\d+: person deleted/).waitFor();
  const { rows } = await stack.pool.query(
    `SELECT 1 FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = 'console-visitor'`,
    [stack.projectId],
  );
  expect(rows).toEqual([]);
});

it('creates a static cohort from a CSV, adds to it, and manages an early access feature', async () => {
  await page.getByRole('link', { name: 'Cohorts' }).click();
  await page.getByLabel('Cohort name').fill('Beta testers');
  await page.getByLabel('CSV of distinct ids', { exact: true }).setInputFiles({
    name: 'testers.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('distinct_id\nuser-1\nuser-2\nuser-3\n'),
  });
  await page.getByRole('button', { name: 'Create cohort' }).click();
  const cohorts = page.getByRole('table', { name: 'Cohorts' });
  await cohorts.getByText('static · 3 members').waitFor();
  await page.getByLabel('Add a CSV to Beta testers').setInputFiles({
    name: 'more.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('user-4\n'),
  });
  await cohorts.getByText('static · 4 members').waitFor();

  await page.getByLabel('Feature name').fill('Dark mode');
  await page.getByRole('button', { name: 'Create (beta)' }).click();
  await page.getByLabel('Stage of Dark mode').waitFor();
  await page.getByLabel('Stage of Dark mode').selectOption('alpha');
  await waitFor('the stage to be stored', async () => {
    const { rows } = await stack.pool.query(
      `SELECT stage FROM early_access_features WHERE name = 'Dark mode'`,
    );
    return rows[0]?.stage === 'alpha';
  });
  await shot('cohorts');
});

it('edits the flag to a cohort condition, and decide follows', async () => {
  await page.getByRole('link', { name: 'Feature flags' }).click();
  await page.getByRole('button', { name: `Edit ${flagKey}` }).click();
  const form = page.getByRole('form', { name: `Edit ${flagKey}` });
  await form.getByLabel('In cohort (optional)').selectOption({ label: 'Beta testers' });
  await form.getByRole('button', { name: 'Save flag' }).click();
  await form.waitFor({ state: 'detached' });
  await page.getByRole('cell', { name: /cohort \d+/ }).waitFor();
  await page.getByRole('switch', { name: `${flagKey} active` }).click();
  await waitFor(
    'decide to serve the cohort its flag',
    async () => (await decideServes(flagKey, 'user-1')) === true,
  );
  expect(await decideServes(flagKey, 'someone-else')).toBe(false);
});

it('shows the project key and snippet, and creates and revokes a personal API key', async () => {
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByLabel(/Project API key/).waitFor();
  expect(await page.getByLabel(/Project API key/).inputValue()).toBe(stack.projectKey);
  expect(await page.getByLabel('Snippet for posthog-js').inputValue()).toContain(stack.projectKey);
  await page.getByLabel('Label').fill('console key');
  await page.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByLabel(/The new key, shown only now/);
  await shown.waitFor();
  const value = await shown.inputValue();
  expect(value).toMatch(/^phx_/);
  // The key works, with the read-only scopes it was given.
  const me = await fetch(`${stack.edgeUrl}/api/projects/${stack.projectId}/feature_flags/`, {
    headers: { authorization: `Bearer ${value}` },
  });
  expect(me.status).toBe(200);
  await shot('settings');
  await page.getByRole('button', { name: 'Revoke console key' }).click();
  await page.getByRole('button', { name: 'Revoke console key' }).waitFor({ state: 'detached' });
  await waitFor(
    'the revoked key to be refused',
    async () =>
      (
        await fetch(`${stack.edgeUrl}/api/projects/${stack.projectId}/feature_flags/`, {
          headers: { authorization: `Bearer ${value}` },
        })
      ).status === 401,
  );
});

it('logs out: the session ends and the sign-in form is back', async () => {
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Sign in to Sett' }).waitFor();
  const me = await page.evaluate(async () => (await fetch('/api/users/@me/')).status);
  expect(me).toBe(401);
});

it('signs in with a second factor once 2FA is on', async () => {
  await signIn(stack.consoleEmail, stack.consolePassword);
  await page.getByRole('button', { name: 'Log out' }).waitFor();
  // Turn 2FA on through the API, from the signed-in page (its session and CSRF token).
  const secret = await page.evaluate(async () => {
    const csrf = document.cookie.match(/sett_csrftoken=([^;]+)/)?.[1] ?? '';
    const r = await fetch('/api/users/@me/start_2fa_setup/', { headers: { 'x-csrftoken': csrf } });
    return ((await r.json()) as { secret: string }).secret;
  });
  const totp = new TOTP({ issuer: 'Sett', label: stack.consoleEmail, secret: Secret.fromBase32(secret) });
  const validated = await page.evaluate(async (token) => {
    const csrf = document.cookie.match(/sett_csrftoken=([^;]+)/)?.[1] ?? '';
    const r = await fetch('/api/users/@me/validate_2fa/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrftoken': csrf },
      body: JSON.stringify({ token }),
    });
    return r.status;
  }, totp.generate());
  expect(validated).toBe(200);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Sign in to Sett' }).waitFor();

  await signIn(stack.consoleEmail, stack.consolePassword);
  await page.getByLabel('Two-factor code').waitFor();
  await shot('two-factor');
  // The next step's code: the one used to validate may not be used again.
  await page.getByLabel('Two-factor code').fill(totp.generate({ timestamp: Date.now() + 30_000 }));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('button', { name: 'Log out' }).waitFor();
  await waitFor(
    'the signed-in user',
    async () => (await page.evaluate(async () => (await fetch('/api/users/@me/')).status)) === 200,
  );
});

it('invites a member by link; the member signs up there and is refused the owner-only page', async () => {
  const email = `member-${randomUUID().slice(0, 8)}@sett.test`;
  // The owner (signed in since the last test) makes the link.
  await page.getByRole('link', { name: 'Organization' }).click();
  await page.getByLabel('Email to invite').fill(email);
  await page.getByRole('button', { name: 'Create invite link' }).click();
  const linkField = page.getByLabel(/Invite link for/);
  await linkField.waitFor();
  const link = await linkField.inputValue();
  expect(link).toMatch(/\/#\/signup\/[0-9a-f-]{36}$/);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Sign in to Sett' }).waitFor();

  await page.goto(link);
  await page.getByRole('heading', { name: 'Join Sett' }).waitFor();
  // The heading shows at once; the invite's email once the link's preview has answered.
  await page.getByText(`as ${email}`).waitFor();
  await shot('signup');
  await page.getByLabel(/Choose a password/).fill('member password 1');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('button', { name: 'Log out' }).waitFor();
  await page.getByRole('link', { name: 'Organization' }).click();
  await page
    .getByRole('alert')
    .getByText(/managed by the organization's admins and owners/)
    .waitFor();
  expect(await page.getByRole('alert').innerText()).toMatch(/Your role here is member/);
  await shot('organization-member');
  // The API refuses it too, whatever the page shows.
  const status = await page.evaluate(async () => {
    const csrf = document.cookie.match(/sett_csrftoken=([^;]+)/)?.[1] ?? '';
    const r = await fetch('/api/organizations/@current/', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-csrftoken': csrf },
      body: JSON.stringify({ name: 'taken over' }),
    });
    return r.status;
  });
  expect(status).toBe(403);
  // An admin action on the settings page: refused, in the API's words.
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('button', { name: 'Rotate the secret API key' }).click();
  await page
    .getByRole('alert')
    .getByText(/must be an organization admin/)
    .waitFor();
  // The browser logs the two refusals this test asked for; nothing else.
  expect(pageErrors).toEqual([
    expect.stringMatching(/status of 403/),
    expect.stringMatching(/status of 403/),
  ]);
  pageErrors.length = 0;
});

afterEach(() => {
  // No script error on any page, and no request refused but the expected 401s.
  expect(pageErrors).toEqual([]);
});
