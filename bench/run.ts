// `pnpm bench [name...]`: runs the named benchmarks (all when none is named). Each benchmark
// measures Sett and, in the same run, a baseline, and prints the ratio: these machines are
// noisy, so only ratios taken side by side mean anything.
import fs from 'node:fs';
import path from 'node:path';

async function main() {
  const available = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.replace(/\.bench\.ts$/, ''))
    .sort();
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const names = wanted.length ? wanted : available;
  for (const name of names) {
    if (!available.includes(name)) {
      process.stderr.write(`unknown benchmark "${name}" (available: ${available.join(', ')})\n`);
      process.exit(2);
    }
  }
  let failed = false;
  for (const name of names) {
    process.stdout.write(`\n=== bench ${name} ===\n`);
    const mod = (await import(path.join(__dirname, `${name}.bench.ts`))) as {
      run: () => Promise<boolean | void>;
    };
    const ok = await mod.run();
    if (ok === false) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
