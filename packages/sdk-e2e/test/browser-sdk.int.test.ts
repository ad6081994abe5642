// posthog-js, unmodified, in headless Chromium, on a web page of another origin than the edge
// that `pnpm start` brings up: the current release as the npm bundle and through PostHog's
// standard HTML snippet (which loads <api_host>/static/array.js from Sett), and 1.251.0 as the
// npm bundle. For each: the pageview, a click as $autocapture (remote config turns autocapture
// on), a custom event and identify reach Postgres; flags equal what /flags answers for that id;
// getEarlyAccessFeatures lists the beta feature and enrolling turns its flag on; and no request
// the page made failed.
import type { Page } from 'playwright-core';
import {
  createPersonCatalogue,
  describePageRequest,
  flagValue,
  launchChromium,
  remoteFlags,
  startSettStack,
  startSite,
  storedEvents,
  waitFor,
  watchPage,
  type Browser,
  type Catalogue,
  type Install,
  type SettStack,
  type Site,
} from '../src';

jest.setTimeout(120_000);

let stack: SettStack;
let catalogue: Catalogue;
let browser: Browser;
let site: Site;

beforeAll(async () => {
  [stack, browser] = await Promise.all([startSettStack(), launchChromium()]);
  catalogue = await createPersonCatalogue(stack, 'web');
  site = await startSite(stack.projectKey, stack.edgeUrl);
}, 180_000);

afterAll(async () => {
  await site?.close();
  await browser?.close();
  await stack?.stop();
});

const INSTALLS: Array<[string, Install]> = [
  ['posthog-js 1.449.2, npm bundle', 'npm'],
  ['posthog-js 1.449.2, HTML snippet loading /static/array.js', 'snippet'],
  ['posthog-js 1.251.0, npm bundle', 'npm-1.251'],
];

describe.each(INSTALLS)('%s', (_name, install) => {
  let page: Page;
  let watch: ReturnType<typeof watchPage>;
  let anonId: string;
  const userId = `web-${install}-user-7`;
  const personProperties = { plan: 'pro', email: 'user-7@corp.example', age: 51 };

  const failedSoFar = () =>
    [
      'failed requests:',
      ...watch.failed.map(describePageRequest),
      'page errors:',
      ...watch.errors,
      'edge requests:',
      ...watch.all
        .filter((r) => r.url.startsWith(stack.edgeUrl))
        .map((r) => `${r.method} ${r.url} ${r.status}`),
    ].join('\n');

  /** Waits for a page-side condition; on timeout, says what and which requests failed. */
  async function inPage(what: string, expression: string, timeout = 15_000): Promise<void> {
    try {
      await page.waitForFunction(expression, undefined, { timeout, polling: 100 });
    } catch {
      throw new Error(`${install}: timed out after ${timeout} ms waiting for ${what}\n${failedSoFar()}`);
    }
  }

  beforeAll(async () => {
    page = await browser.context.newPage();
    watch = watchPage(page);
    await page.goto(site.url(install));
  });

  afterAll(async () => {
    await page?.close();
  });

  it('loads from another origin and sends the $pageview', async () => {
    expect(new URL(site.origin).origin).not.toBe(new URL(stack.edgeUrl).origin);
    await inPage('posthog-js to load (loaded callback)', 'window.__phLoaded === true');
    if (install === 'snippet') {
      // The snippet's only script source is Sett's /static/array.js.
      expect(
        watch.all.filter((r) => r.url === `${stack.edgeUrl}/static/array.js`).map((r) => r.status),
      ).toEqual([200]);
    }
    anonId = (await page.evaluate('posthog.get_distinct_id()')) as string;
    expect(anonId).toEqual(expect.any(String));
    await waitFor(
      `the $pageview of ${anonId} in Postgres`,
      async () => (await storedEvents(stack, [anonId], ['$pageview'])).length >= 1,
      20_000,
      failedSoFar,
    );
  });

  it('turns autocapture on from remote config, and a click arrives as $autocapture', async () => {
    await inPage(
      'autocapture to be enabled (remote config)',
      'posthog.autocapture !== undefined && posthog.autocapture.isEnabled === true',
    );
    if (install !== 'npm-1.251') {
      // 1.449 reads its settings only from the remote config script.
      const config = watch.all.filter((r) =>
        r.url.startsWith(`${stack.edgeUrl}/array/${stack.projectKey}/config`),
      );
      expect(config.map((r) => `${new URL(r.url).pathname} ${r.status}`)).toContain(
        `/array/${stack.projectKey}/config.js 200`,
      );
    }
    await page.click('#buy');
    const rows = await waitFor(
      `the $autocapture click of ${anonId} in Postgres`,
      async () => {
        const r = await storedEvents(stack, [anonId], ['$autocapture']);
        return r.length >= 1 ? r : undefined;
      },
      20_000,
      failedSoFar,
    );
    expect(rows[0]!.properties).toMatchObject({ $event_type: 'click' });
    expect(JSON.stringify(rows[0]!.properties)).toContain('buy');
  });

  it('sends a custom event and identify', async () => {
    await page.evaluate(`posthog.capture('web custom', { install: ${JSON.stringify(install)}, n: 1 })`);
    // Flags for the identified user are computed with the properties it is identified with.
    await inPage('the first flags load', 'window.__flagLoads.length >= 1');
    await page.evaluate(
      `posthog.setPersonPropertiesForFlags(${JSON.stringify(personProperties)}, false);
       posthog.identify(${JSON.stringify(userId)}, ${JSON.stringify(personProperties)})`,
    );
    const rows = await waitFor(
      'the custom event and $identify in Postgres',
      async () => {
        const r = await storedEvents(stack, [anonId, userId], ['web custom', '$identify']);
        return r.some((e) => e.event === '$identify') && r.some((e) => e.event === 'web custom')
          ? r
          : undefined;
      },
      20_000,
      failedSoFar,
    );
    expect(rows.find((e) => e.event === 'web custom')!.properties).toMatchObject({ install, n: 1 });
    const identify = rows.find((e) => e.event === '$identify')!;
    expect(identify.distinct_id).toBe(userId);
    expect(identify.properties).toMatchObject({ $anon_distinct_id: anonId });
  });

  it('answers getFeatureFlag / isFeatureEnabled / payloads as /flags does for that id', async () => {
    await inPage(
      `flags loaded for ${userId}`,
      `window.__flagLoads.some(function (l) { return l.distinctId === ${JSON.stringify(userId)} })`,
    );
    const inBrowser = (await page.evaluate(
      `(${JSON.stringify(catalogue.keys)}).map(function (k) {
         return [k, posthog.getFeatureFlag(k, { send_event: false }), posthog.isFeatureEnabled(k, { send_event: false }),
                 posthog.getFeatureFlagPayload(k)];
       })`,
    )) as Array<[string, unknown, unknown, unknown]>;
    const remote = await remoteFlags(stack, { distinct_id: userId, person_properties: personProperties });
    expect(remote.status).toBe(200);
    // A flag /flags leaves out (the inactive one): 1.251 says isFeatureEnabled false, 1.449 undefined.
    const absentEnabled = install === 'npm-1.251' ? false : undefined;
    const expected = catalogue.keys.map((k) => {
      const f = remote.answer.flags[k];
      const payload =
        f?.enabled && f.metadata?.payload ? (JSON.parse(f.metadata.payload) as unknown) : undefined;
      return [k, flagValue(remote.answer, k), f ? f.enabled : absentEnabled, payload];
    });
    // posthog-js answers undefined for the payload of a flag without one; JSON drops undefined alike.
    expect(JSON.parse(JSON.stringify(inBrowser))).toEqual(JSON.parse(JSON.stringify(expected)));
    // The comparison covers real variety: a variant, a property match, an off flag.
    expect(inBrowser.find(([k]) => k === 'web-override')![1]).toBe('beta');
    expect(inBrowser.find(([k]) => k === 'web-person')![1]).toBe(true);
    expect(inBrowser.find(([k]) => k === catalogue.betaKey)![1]).toBe(false);
  });

  it('lists the beta early access feature, and enrolling turns its flag on', async () => {
    await page.evaluate(`window.__eaf = undefined;
      posthog.getEarlyAccessFeatures(function (features) { window.__eaf = features }, true)`);
    await inPage('the getEarlyAccessFeatures callback', 'window.__eaf !== undefined');
    const features = (await page.evaluate('window.__eaf')) as Array<Record<string, unknown>>;
    expect(features).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: catalogue.betaFeatureName,
          flagKey: catalogue.betaKey,
          stage: 'beta',
        }),
      ]),
    );
    await page.evaluate(
      `posthog.updateEarlyAccessFeatureEnrollment(${JSON.stringify(catalogue.betaKey)}, true)`,
    );
    await inPage(
      'the enrolled flag to be on',
      `posthog.isFeatureEnabled(${JSON.stringify(catalogue.betaKey)}) === true`,
    );
    // The enrollment is a person property set through an event: /flags agrees once it is stored.
    await waitFor(
      `/flags to answer ${catalogue.betaKey} = true for ${userId} from the stored enrollment`,
      async () =>
        flagValue((await remoteFlags(stack, { distinct_id: userId })).answer, catalogue.betaKey) === true,
      20_000,
      failedSoFar,
    );
  });

  it('made no failed request and raised no page error', async () => {
    expect(watch.all.filter((r) => r.url.startsWith(stack.edgeUrl)).length).toBeGreaterThan(3);
    expect(watch.failed.map(describePageRequest)).toEqual([]);
    expect(watch.errors).toEqual([]);
  });
});
