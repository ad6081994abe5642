// Durability: when Kafka does not acknowledge, capture answers 503 (never 200), and the event
// it refused is not on the topic afterwards. Own broker, because this file takes it down.
import { uniqueName } from '@sett/testing';
import { startHarness, type Harness } from './helpers';

jest.setTimeout(60_000);
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ sendTimeoutMs: 2000 });
}, 60_000);
afterAll(async () => {
  await h?.close();
}, 30_000);

it('answers 503 while the broker is down, nothing of that request is acknowledged, and 200 again once it is back', async () => {
  const warm = uniqueName('warm');
  expect(
    (await h.post('/e/', JSON.stringify({ api_key: h.token, event: 'warm', distinct_id: warm }))).status,
  ).toBe(200);
  await h.waitFor((all) => all.some((c) => c.message.distinct_id === warm));

  await h.broker.setBrokerDown(1);
  const lost = uniqueName('lost');
  const res = await h.post(
    '/batch/',
    JSON.stringify({
      api_key: h.token,
      batch: [
        { event: 'e', distinct_id: lost },
        { event: 'f', distinct_id: lost },
      ],
    }),
  );
  expect(res.status).toBe(503);
  expect(res.json).toMatchObject({ type: 'unavailable_error', code: 'service_unavailable' });
  expect(res.headers.get('retry-after')).toBe('1');

  await h.broker.setBrokerUp(1);
  const after = uniqueName('after');
  let status = 0;
  // The client reconnects on its own; retry as an SDK would.
  for (let i = 0; i < 20 && status !== 200; i++) {
    status = (await h.post('/e/', JSON.stringify({ api_key: h.token, event: 'after', distinct_id: after })))
      .status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 250));
  }
  expect(status).toBe(200);
  await h.waitFor((all) => all.some((c) => c.message.distinct_id === after), 30_000);
  expect(h.consumed.filter((c) => c.message.distinct_id === lost)).toHaveLength(0);
});

it('answers 503 when the broker is gone for good', async () => {
  await h.stopConsumer();
  await h.broker.stop();
  const res = await h.post(
    '/e/',
    JSON.stringify({ api_key: h.token, event: 'e', distinct_id: uniqueName('gone') }),
  );
  expect(res.status).toBe(503);
});
