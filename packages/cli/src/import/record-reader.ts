// Reads an import file as records with exact positions: JSON lines, a JSON array of objects, or
// CSV with a header, plain or gzip-compressed (by extension or magic bytes). Each record carries
// its line number (for rejects), its sequence number and the byte offset in the decoded stream
// where it starts (for checkpoints), so a resumed run starts exactly at a record boundary.
// Memory is bounded: a record longer than maxRecordBytes is skipped and reported, not buffered.
import fs from 'node:fs';
import zlib from 'node:zlib';

export type InputLayout = 'jsonl' | 'json-array' | 'csv';

export type RecordPosition = {
  /** 0-based index of the record in the file. */
  seq: number;
  /** 1-based line where the record starts. */
  line: number;
  /** Byte offset of the record's start in the decoded (uncompressed) stream. */
  offset: number;
};

export type InputRecord = RecordPosition & {
  /** The record's text (without its line break); '' when oversized. */
  text: string;
  /** Set when the record exceeded maxRecordBytes; its bytes were skipped. */
  oversizedBytes?: number;
};

export type InputInfo = { gzip: boolean; layout: InputLayout; sizeBytes: number; mtimeMs: number };

const NL = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Looks at the name and the first bytes: gzip by `.gz` or magic 1f 8b; CSV by `.csv`; JSON array by a leading `[`. */
export async function inspectInput(file: string): Promise<InputInfo> {
  const stat = await fs.promises.stat(file);
  const fd = await fs.promises.open(file, 'r');
  let head: Buffer;
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await fd.read(buf, 0, 2, 0);
    head = buf.subarray(0, bytesRead);
  } finally {
    await fd.close();
  }
  const gzip = /\.gz$/i.test(file) || (head[0] === 0x1f && head[1] === 0x8b);
  const base = file.replace(/\.gz$/i, '');
  let layout: InputLayout = /\.csv$/i.test(base) ? 'csv' : 'jsonl';
  if (layout !== 'csv') {
    const first = await firstNonSpaceByte(file, gzip);
    if (first === 0x5b) layout = 'json-array';
  }
  return { gzip, layout, sizeBytes: stat.size, mtimeMs: stat.mtimeMs };
}

async function firstNonSpaceByte(file: string, gzip: boolean): Promise<number | null> {
  const raw = fs.createReadStream(file, { highWaterMark: 64 * 1024 });
  const stream = gzip ? raw.pipe(zlib.createGunzip()) : raw;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const b of chunk)
        if (b !== 0x20 && b !== 0x09 && b !== NL && b !== CR && b !== 0xef && b !== 0xbb && b !== 0xbf)
          return b;
    }
    return null;
  } finally {
    raw.destroy();
  }
}

export type ReadOptions = {
  file: string;
  info: InputInfo;
  maxRecordBytes: number;
  /** Where to start (a checkpoint); the start of the file when absent. */
  from?: RecordPosition;
  /** Called with the compressed (on-disk) bytes read so far, for progress. */
  onRawBytes?: (bytes: number) => void;
  signal?: AbortSignal;
};

/**
 * Yields the records of the file in order. For a plain file a resume seeks to the offset; for
 * gzip the stream is decoded from the start and the bytes before the offset are discarded.
 */
export async function* readRecords(opts: ReadOptions): AsyncGenerator<InputRecord> {
  const { info } = opts;
  const from = opts.from ?? { seq: 0, line: 1, offset: 0 };
  const raw = fs.createReadStream(opts.file, {
    highWaterMark: 1024 * 1024,
    start: info.gzip ? 0 : from.offset,
  });
  let rawBytes = info.gzip ? 0 : from.offset;
  raw.on('data', (c) => {
    rawBytes += c.length;
    opts.onRawBytes?.(rawBytes);
  });
  const stream = info.gzip ? raw.pipe(zlib.createGunzip()) : raw;
  if (info.gzip) raw.on('error', (e) => stream.destroy(e));

  let skip = info.gzip ? from.offset : 0;
  let offset = from.offset; // decoded offset of buf[0]
  let seq = from.seq;
  let line = from.line;
  // Scanner state.
  let parts: Buffer[] = [];
  let partsBytes = 0;
  let oversized = 0;
  let recStart = offset;
  let recLine = line;
  let started = false; // a record has begun (non-space seen, for arrays)
  let inString = false;
  let escape = false;
  let depth = opts.from && info.layout === 'json-array' && opts.from.offset > 0 ? 1 : 0;
  let arrayClosed = false;
  let bom = offset === 0;

  const take = (chunk: Buffer, from: number, to: number) => {
    if (to <= from) return;
    if (oversized > 0 || partsBytes + (to - from) > opts.maxRecordBytes) {
      oversized = (oversized || partsBytes) + (to - from);
      parts = [];
      partsBytes = 0;
      return;
    }
    parts.push(chunk.subarray(from, to));
    partsBytes += to - from;
  };
  const finish = (): InputRecord | null => {
    const bytes = oversized || partsBytes;
    let rec: InputRecord | null = null;
    if (oversized > 0) {
      rec = { seq: seq++, line: recLine, offset: recStart, text: '', oversizedBytes: oversized };
    } else if (bytes > 0) {
      let text = (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      if (info.layout === 'json-array') text = text.trim();
      if (text.trim() !== '') rec = { seq: seq++, line: recLine, offset: recStart, text };
    }
    parts = [];
    partsBytes = 0;
    oversized = 0;
    return rec;
  };

  try {
    for await (let chunk of stream as AsyncIterable<Buffer>) {
      if (opts.signal?.aborted) return;
      if (skip > 0) {
        if (chunk.length <= skip) {
          skip -= chunk.length;
          continue;
        }
        chunk = chunk.subarray(skip);
        skip = 0;
      }
      let i = 0;
      if (bom && chunk.length >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
        i = 3;
        recStart = offset + 3;
      }
      bom = false;
      let segStart = i;
      if (info.layout === 'json-array') {
        for (; i < chunk.length; i++) {
          const b = chunk[i]!;
          if (inString) {
            if (escape) escape = false;
            else if (b === BACKSLASH) escape = true;
            else if (b === QUOTE) inString = false;
            else if (b === NL) line++;
            continue;
          }
          if (b === NL) line++;
          if (depth === 0) {
            if (b === 0x5b) {
              depth = 1;
              segStart = i + 1;
              recStart = offset + i + 1;
              recLine = line;
            } else if (b > 0x20 && !arrayClosed) {
              throw new Error(`line ${line}: the file starts like a JSON array but has data outside it`);
            }
            continue;
          }
          if (depth === 1 && (b === 0x2c || b === 0x5d)) {
            take(chunk, segStart, i);
            const rec = finish();
            if (rec) yield rec;
            started = false;
            segStart = i + 1;
            recStart = offset + i + 1;
            recLine = line;
            if (b === 0x5d) {
              depth = 0;
              arrayClosed = true;
            }
            continue;
          }
          if (!started && b > 0x20) {
            // The record starts at its first visible byte (for its line number and offset).
            started = true;
            segStart = i;
            recStart = offset + i;
            recLine = line;
          }
          if (b === QUOTE) inString = true;
          else if (b === 0x7b || b === 0x5b) depth++;
          else if (b === 0x7d || b === 0x5d) depth--;
        }
        if (depth > 0 && started) take(chunk, segStart, chunk.length);
      } else {
        const csv = info.layout === 'csv';
        for (; i < chunk.length; i++) {
          const b = chunk[i]!;
          if (csv && b === QUOTE) inString = !inString;
          if (b !== NL) continue;
          line++;
          if (inString) continue; // a line break inside a quoted CSV field
          take(chunk, segStart, i);
          const rec = finish();
          if (rec) yield rec;
          segStart = i + 1;
          recStart = offset + i + 1;
          recLine = line;
        }
        take(chunk, segStart, chunk.length);
      }
      offset += chunk.length;
    }
    if (info.layout === 'json-array') {
      if (depth > 0) throw new Error(`line ${line}: the JSON array is not closed (truncated file?)`);
    } else {
      const rec = finish();
      if (rec) yield rec;
    }
  } finally {
    raw.destroy();
    if (stream !== raw) (stream as zlib.Gunzip).destroy();
  }
}
