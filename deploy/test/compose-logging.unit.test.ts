// Every container of docker-compose.yml (and of the external-Kafka overlay, which must not undo
// it) rotates its json-file log: Docker's default keeps one log file per container that grows
// until the disk is full.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

type Service = { logging?: { driver?: string; options?: Record<string, unknown> } };
const root = join(__dirname, '..', '..');
const load = (file: string) =>
  parse(readFileSync(join(root, file), 'utf8'), { merge: true, customTags: resetTags }) as {
    services: Record<string, Service>;
  };
// Compose's `!reset` / `!override` tags in the overlay parse as their plain values here.
const resetTags = ['!reset', '!override'].flatMap((tag) => [
  { tag, collection: 'map' as const, resolve: (v: unknown) => v },
  { tag, collection: 'seq' as const, resolve: (v: unknown) => v },
]);

describe('compose log rotation', () => {
  const base = load('docker-compose.yml');

  it.each(Object.keys(base.services))('%s keeps at most max-file json-file logs of max-size', (name) => {
    const logging = base.services[name]!.logging;
    expect(logging?.driver).toBe('json-file');
    expect(String(logging?.options?.['max-size'])).toMatch(/^\$\{LOG_MAX_SIZE:-\d+m\}$|^\d+m$/);
    expect(String(logging?.options?.['max-file'])).toMatch(/^\$\{LOG_MAX_FILE:-\d+\}$|^\d+$/);
  });

  it('the external-Kafka overlay does not replace any service logging', () => {
    const overlay = load('deploy/docker/compose.external-kafka.yml');
    for (const [name, svc] of Object.entries(overlay.services)) {
      expect(base.services[name]).toBeDefined();
      if (svc.logging) expect(svc.logging.driver).toBe('json-file');
    }
  });
});
