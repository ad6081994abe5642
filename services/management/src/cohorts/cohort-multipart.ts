// Reads a multipart/form-data request (a static cohort CSV upload, as PostHog's UI sends it:
// form fields plus a file in the `csv` field) into memory, bounded: the file at
// MAX_CSV_BYTES (413 beyond), at most 20 other fields of 64 KB each.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { PayloadTooLargeError, ValidationError } from '@sett/http';

/** Largest CSV accepted (about 2 million distinct ids of 20 characters). */
export const MAX_CSV_BYTES = 50 * 1024 * 1024;

export interface MultipartForm {
  fields: Record<string, string>;
  csv?: Buffer;
}

export function readMultipart(req: IncomingMessage, maxFileBytes = MAX_CSV_BYTES): Promise<MultipartForm> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: maxFileBytes, parts: 21 },
      });
    } catch {
      reject(new ValidationError('Malformed multipart/form-data request.', 'csv'));
      return;
    }
    const form: MultipartForm = { fields: {} };
    let chunks: Buffer[] | undefined;
    let failed = false;
    // Answer at once; the rest of the upload is read and dropped.
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      req.resume();
      reject(err);
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new ValidationError(`${name} is too long.`, name));
      else form.fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      if (name !== 'csv') {
        stream.resume();
        fail(new ValidationError(`${name} is not an accepted file field; send the file as csv.`, name));
        return;
      }
      const parts: Buffer[] = (chunks = []);
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('limit', () =>
        fail(new PayloadTooLargeError(`The CSV file is larger than ${maxFileBytes} bytes.`)),
      );
    });
    parser.on('filesLimit', () => fail(new ValidationError('Send one file, as csv.', 'csv')));
    parser.on('fieldsLimit', () => fail(new ValidationError('Too many form fields.', null)));
    parser.on('partsLimit', () => fail(new ValidationError('Too many form fields.', null)));
    parser.on('error', () => fail(new ValidationError('Malformed multipart/form-data request.', 'csv')));
    parser.on('close', () => {
      if (failed) return;
      if (chunks) form.csv = Buffer.concat(chunks);
      resolve(form);
    });
    req.on('error', fail);
    req.pipe(parser);
  });
}
