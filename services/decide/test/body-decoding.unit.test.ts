import { gzipSync } from 'node:zlib';
import LZString from 'lz-string';
import { PayloadTooLargeError, ValidationError } from '@sett/http';
import { decodeDecideBody } from '../src/decide/body-decoding';

const payload = { api_key: 'phc_x', distinct_id: 'user-1', person_properties: { email: 'a+b@example.com' } };
const json = JSON.stringify(payload);
const max = 1024 * 1024;

describe('decodeDecideBody', () => {
  it('reads plain JSON', async () => {
    await expect(
      decodeDecideBody({ body: Buffer.from(json), contentType: 'application/json', maxBytes: max }),
    ).resolves.toEqual(payload);
  });

  it('reads gzip named by ?compression=gzip-js and sniffed without it', async () => {
    const gz = gzipSync(json);
    await expect(decodeDecideBody({ body: gz, compression: 'gzip-js', maxBytes: max })).resolves.toEqual(
      payload,
    );
    await expect(decodeDecideBody({ body: gz, contentType: 'text/plain', maxBytes: max })).resolves.toEqual(
      payload,
    );
  });

  it('reads base64 in a data= form field, escaped or not', async () => {
    const b64 = Buffer.from(json).toString('base64');
    const escaped = `data=${encodeURIComponent(b64)}`;
    const raw = `data=${b64}`;
    for (const text of [escaped, raw]) {
      await expect(
        decodeDecideBody({
          body: Buffer.from(text),
          contentType: 'application/x-www-form-urlencoded',
          compression: 'base64',
          maxBytes: max,
        }),
      ).resolves.toEqual(payload);
    }
    // no compression named at all: base64 is recognised because the text is not JSON
    await expect(
      decodeDecideBody({
        body: Buffer.from(escaped),
        contentType: 'application/x-www-form-urlencoded',
        maxBytes: max,
      }),
    ).resolves.toEqual(payload);
  });

  it('reads lz64 (lz-string base64) from the query or the form', async () => {
    const lz = LZString.compressToBase64(json);
    await expect(
      decodeDecideBody({
        body: Buffer.from(`data=${encodeURIComponent(lz)}`),
        contentType: 'application/x-www-form-urlencoded',
        compression: 'lz64',
        maxBytes: max,
      }),
    ).resolves.toEqual(payload);
    await expect(
      decodeDecideBody({
        body: Buffer.from(`data=${encodeURIComponent(lz)}&compression=lz64`),
        contentType: 'application/x-www-form-urlencoded',
        maxBytes: max,
      }),
    ).resolves.toEqual(payload);
  });

  it('reads a bare base64 body', async () => {
    await expect(
      decodeDecideBody({
        body: Buffer.from(Buffer.from(json).toString('base64')),
        compression: 'base64',
        maxBytes: max,
      }),
    ).resolves.toEqual(payload);
  });

  it.each([
    ['empty', Buffer.alloc(0)],
    ['not JSON', Buffer.from('{nope')],
    ['a JSON array', Buffer.from('[1,2]')],
    ['broken gzip', Buffer.from([0x1f, 0x8b, 1, 2, 3])],
  ])('refuses %s with a 400', async (_name, body) => {
    await expect(decodeDecideBody({ body, maxBytes: max })).rejects.toThrow(ValidationError);
  });

  it('reads JSON sent as form-urlencoded without a data field (curl -d), "+" and "%" intact', async () => {
    const curl = JSON.stringify({ ...payload, person_properties: { email: 'a+b@example.com', pct: '100%' } });
    for (const body of [curl, `  ${curl}`]) {
      await expect(
        decodeDecideBody({
          body: Buffer.from(body),
          contentType: 'application/x-www-form-urlencoded',
          maxBytes: max,
        }),
      ).resolves.toEqual(JSON.parse(curl));
    }
    // Malformed JSON in that position is still a 400, not a form decoding surprise.
    await expect(
      decodeDecideBody({
        body: Buffer.from('{"api_key":'),
        contentType: 'application/x-www-form-urlencoded',
        maxBytes: max,
      }),
    ).rejects.toThrow(/not valid JSON/);
  });

  it('refuses bad lz64 and a form without data', async () => {
    await expect(
      decodeDecideBody({ body: Buffer.from('data=@@@'), compression: 'lz64', maxBytes: max }),
    ).rejects.toThrow(ValidationError);
    await expect(
      decodeDecideBody({
        body: Buffer.from('x=1'),
        contentType: 'application/x-www-form-urlencoded',
        maxBytes: max,
      }),
    ).rejects.toThrow(ValidationError);
  });

  it('refuses a gzip body that inflates past the limit with a 413', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024, 'a'));
    await expect(decodeDecideBody({ body: bomb, maxBytes: 4096 })).rejects.toThrow(PayloadTooLargeError);
  });
});
