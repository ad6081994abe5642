// /_ready tells the truth about Kafka: 503 (naming kafka) while the broker is down, even with no
// traffic to notice it, and 200 again by itself once the broker is back, without any event having
// to fail or succeed first. Every answer comes within the readiness timeout. Own broker, because
// this file takes it down.
import { uniqueName, waitFor } from '@sett/testing';
import { startHarness, type Harness } from './helpers';

jest.setTimeout(60_000);
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ sendTimeoutMs: 2000, consume: false });
}, 60_000);
afterAll(async () => {
  await h?.close();
}, 30_000);

type Ready = {
  status: number;
  ms: number;
  body: { checks: Record<string, { ok: boolean; error?: string }> };
};

async function ready(): Promise<Ready> {
  const start = Date.now();
  const res = await fetch(`${h.url}/_ready`);
  const body = (await res.json()) as Ready['body'];
  return { status: res.status, ms: Date.now() - start, body };
}

/** Polls /_ready until it answers `status`; every answer must come within the bound. */
async function waitForReady(status: number, timeoutMs = 20_000): Promise<Ready> {
  let last: Ready | undefined;
  return waitFor(
    `/_ready to answer ${status}`,
    async () => {
      last = await ready();
      // The readiness runner gives each check 2 s; the kafka probe answers well before that.
      expect(last.ms).toBeLessThan(2500);
      return last.status === status && last;
    },
    { timeoutMs, intervalMs: 100 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}: still ${last?.status} ${JSON.stringify(last?.body)}`);
  });
}

const postEvent = (id: string) =>
  h.post('/e/', JSON.stringify({ api_key: h.token, event: 'e', distinct_id: id }));

it('goes 503 while the broker is down (events 503 too) and back to 200 by itself once it is up', async () => {
  const up = await waitForReady(200);
  expect(up.body.checks.kafka).toEqual({ ok: true });
  expect((await postEvent(uniqueName('before'))).status).toBe(200);

  await h.broker.setBrokerDown(1);
  // No traffic: the idle probe finds out.
  const down = await waitForReady(503);
  expect(down.body.checks.kafka?.ok).toBe(false);
  expect(down.body.checks.kafka?.error).toEqual(expect.any(String));
  expect(down.body.checks.redis).toEqual({ ok: true });
  const refused = await postEvent(uniqueName('down'));
  expect(refused.status).toBe(503);
  expect(refused.json).toMatchObject({ type: 'unavailable_error' });
  expect((await ready()).status).toBe(503);

  await h.broker.setBrokerUp(1);
  // Nothing is sent meanwhile: readiness recovers on its own.
  const back = await waitForReady(200, 30_000);
  expect(back.body.checks.kafka).toEqual({ ok: true });
  expect((await postEvent(uniqueName('after'))).status).toBe(200);
});
