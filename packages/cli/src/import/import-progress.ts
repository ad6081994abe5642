// Progress of an import on stderr: a cli-progress bar (percent of the file's bytes, events/s,
// ETA) on a terminal, plain lines every few seconds otherwise (CI logs, pipes).
import { SingleBar } from 'cli-progress';

export type ImportProgress = {
  update(rawBytes: number, events: number): void;
  /** A message that must not be drawn over by the bar. */
  log(message: string): void;
  stop(): void;
};

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

function eta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600)
    return `${Math.floor(seconds / 60)}m${String(Math.round(seconds % 60)).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.round((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

export function createImportProgress(opts: {
  totalBytes: number;
  startBytes: number;
  stream?: NodeJS.WriteStream;
  intervalMs?: number;
}): ImportProgress {
  const stream = opts.stream ?? process.stderr;
  const total = Math.max(1, opts.totalBytes);
  const started = Date.now();
  let events = 0;
  let bytes = opts.startBytes;
  const rate = () => events / Math.max(0.001, (Date.now() - started) / 1000);

  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format: ' {bar} {percentage}% | {events} events | {rate} events/s | ETA {eta_formatted}',
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
      barsize: 30,
    });
    bar.start(total, opts.startBytes, { events: 0, rate: 0 });
    return {
      update(rawBytes, n) {
        events = n;
        bar.update(Math.min(rawBytes, total), {
          events: n.toLocaleString('en-US'),
          rate: Math.round(rate()).toLocaleString('en-US'),
        });
      },
      log(message) {
        // cli-progress redraws on the next tick; clear the line first so the message stands alone.
        stream.write(`\r\x1b[K${message}\n`);
      },
      stop() {
        bar.stop();
      },
    };
  }

  const interval = opts.intervalMs ?? 5000;
  let last = Date.now();
  const line = () => {
    const pct = Math.min(100, (bytes / total) * 100);
    const bytesPerSec = (bytes - opts.startBytes) / Math.max(0.001, (Date.now() - started) / 1000);
    stream.write(
      `import: ${pct.toFixed(1)}% (${mb(bytes)} of ${mb(total)}), ${events.toLocaleString('en-US')} events, ` +
        `${Math.round(rate()).toLocaleString('en-US')} events/s, ETA ${eta((total - bytes) / bytesPerSec)}\n`,
    );
  };
  return {
    update(rawBytes, n) {
      bytes = rawBytes;
      events = n;
      const now = Date.now();
      if (now - last >= interval) {
        last = now;
        line();
      }
    },
    log(message) {
      stream.write(`${message}\n`);
    },
    stop() {
      line();
    },
  };
}
