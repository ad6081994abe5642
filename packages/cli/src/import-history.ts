// `sett import`: send a file of past events (JSON lines, one event per line) through the
// batch endpoint with historical_migration: true, so they take the ordered historical path
// and never delay live events. Batches go out one at a time, in file order, and a failed
// batch is retried before the next is sent, so order and completeness are kept.
import fs from 'node:fs';
import readline from 'node:readline';

export interface ImportOptions {
  file: string;
  apiKey: string;
  url: string;
  batchSize: number;
  onProgress?: (sent: number) => void;
}

async function post(url: string, body: string, attempts = 5): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      if (res.ok) return;
      const text = await res.text();
      // 4xx other than 429 will not get better by retrying.
      if (res.status < 500 && res.status !== 429) throw new Error(`HTTP ${res.status}: ${text}`);
      if (i >= attempts) throw new Error(`HTTP ${res.status} after ${attempts} attempts: ${text}`);
    } catch (err) {
      if (i >= attempts || (err as Error).message.startsWith('HTTP 4')) throw err;
    }
    await new Promise((r) => setTimeout(r, 250 * 2 ** i));
  }
}

export async function importHistory(opts: ImportOptions): Promise<{ sent: number; skipped: number }> {
  const endpoint = `${opts.url.replace(/\/$/, '')}/batch/`;
  const lines = readline.createInterface({ input: fs.createReadStream(opts.file), crlfDelay: Infinity });
  let batch: unknown[] = [];
  let sent = 0;
  let skipped = 0;
  let lineNo = 0;
  const flush = async () => {
    if (!batch.length) return;
    await post(endpoint, JSON.stringify({ api_key: opts.apiKey, historical_migration: true, batch }));
    sent += batch.length;
    batch = [];
    opts.onProgress?.(sent);
  };
  for await (const line of lines) {
    lineNo++;
    if (!line.trim()) continue;
    try {
      batch.push(JSON.parse(line));
    } catch {
      skipped++;
      process.stderr.write(`line ${lineNo}: not JSON, skipped\n`);
      continue;
    }
    if (batch.length >= opts.batchSize) await flush();
  }
  await flush();
  return { sent, skipped };
}
