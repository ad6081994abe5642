// sendError (for plain node:http handlers) answers exactly as the error middleware does:
// same status, headers and body for known errors, body parser failures and unexpected errors.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createSilentLogger } from '@sett/logger';
import {
  createMetricsRegistry,
  createServiceApp,
  MethodNotAllowedError,
  RateLimitedError,
  sendError,
  ValidationError,
} from '../src';

const errors: Record<string, () => unknown> = {
  validation: () => new ValidationError('name is required.', 'name'),
  method: () => new MethodNotAllowedError('GET', ['POST', 'OPTIONS']),
  throttled: () => new RateLimitedError(3),
  parser: () => Object.assign(new Error('too big'), { type: 'entity.too.large', status: 413 }),
  boom: () => new Error('secret internals'),
};

async function listen(listener: http.RequestListener): Promise<{ base: string; close: () => Promise<void> }> {
  const server = http.createServer(listener);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('sendError', () => {
  it('answers as the error middleware does', async () => {
    const logger = createSilentLogger();
    const routes = express.Router();
    routes.get('/:kind', (req) => {
      throw errors[req.params.kind as string]!();
    });
    const viaExpress = await listen(
      createServiceApp({ name: 't', logger, registry: createMetricsRegistry('t'), readiness: {}, routes }),
    );
    const plain = await listen((req, res) => sendError(res, errors[req.url!.slice(1)]!(), logger, req));
    try {
      for (const kind of Object.keys(errors)) {
        const [a, b] = await Promise.all([
          fetch(`${viaExpress.base}/${kind}`),
          fetch(`${plain.base}/${kind}`),
        ]);
        expect(b.status).toBe(a.status);
        for (const h of ['content-type', 'content-length', 'allow', 'retry-after']) {
          if (kind === 'boom' && h === 'content-length') continue; // the error id differs
          expect([kind, h, b.headers.get(h)]).toEqual([kind, h, a.headers.get(h)]);
        }
        const [ja, jb] = [
          (await a.json()) as Record<string, unknown>,
          (await b.json()) as Record<string, unknown>,
        ];
        if (kind === 'boom') {
          expect(jb.error_id).toMatch(/^[0-9a-f-]{36}$/);
          expect({ ...jb, error_id: 'x' }).toEqual({ ...ja, error_id: 'x' });
        } else {
          expect(jb).toEqual(ja);
        }
      }
    } finally {
      await Promise.all([viaExpress.close(), plain.close()]);
    }
  });
});
