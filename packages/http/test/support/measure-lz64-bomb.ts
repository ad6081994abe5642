// Prints the time and peak memory of decoding a 74 KB lz64 bomb, before (the lz-string package,
// which decodes everything and is checked afterwards) and after (decodeBody with the cap).
// Run one mode per process so the numbers do not mix:
//   node_modules/.bin/tsx packages/http/test/support/measure-lz64-bomb.ts old|decide|capture
import { decompressFromBase64 } from 'lz-string';
import { decodeBody } from '../../src';
import { lz64BombOfSize } from './lz64-bomb';

async function main() {
  const mode = process.argv[2] ?? 'decide';
  const bomb = lz64BombOfSize(74 * 1024);
  const raw = Buffer.from(`data=${encodeURIComponent(bomb)}&compression=lz64`);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const before = process.memoryUsage().rss;
  const start = process.hrtime.bigint();
  let outcome: string;
  if (mode === 'old') {
    const out = decompressFromBase64(bomb);
    outcome = `decoded ${out?.length} chars`;
  } else {
    const cap = mode === 'capture' ? 20 * 1024 * 1024 * 5 : 1024 * 1024;
    outcome = await decodeBody(
      {
        raw,
        contentType: 'application/x-www-form-urlencoded',
        contentEncoding: undefined,
        compression: undefined,
      },
      { maxInflatedBytes: cap },
    ).then(
      () => 'accepted',
      (e: Error & { status?: number }) => `${e.status} ${e.message}`,
    );
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  peak = Math.max(peak, process.memoryUsage().rss);
  clearInterval(sampler);
  console.log(
    JSON.stringify({
      mode,
      bomb_bytes: raw.length,
      ms: Math.round(ms),
      rss_before_mb: Math.round(before / 2 ** 20),
      rss_peak_mb: Math.round(peak / 2 ** 20),
      outcome,
    }),
  );
}

void main();
