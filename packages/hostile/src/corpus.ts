// The hostile-input corpus: every case is one HTTP request to capture, decide or management,
// named so a failure says exactly what was sent. Bodies are built lazily (some are tens of
// megabytes or decompression bombs) and only while their case runs.
import {
  DEEP_SHAPES,
  DEPTHS,
  INVALID_UTF8,
  UNSTORABLE_ESCAPES,
  gzipBomb,
  gzipOne,
  lz64Bomb,
  randomPaths,
  withBytes,
} from './generators';
import { EDGE_ROUTING } from '@sett/devstack';

export type Service = 'capture' | 'decide' | 'management';
export const CASE_CLASSES = [
  'depth',
  'encoding',
  'size',
  'bomb',
  'types',
  'time',
  'auth',
  'paths',
  'flags',
  'races',
  'query',
] as const;
export type CaseClass = (typeof CASE_CLASSES)[number];

export interface HostileCase {
  /** Unique, human-readable: class, service, what was sent. */
  name: string;
  cls: CaseClass;
  service: Service;
  method: string;
  /** Sent as is (no normalisation): may hold malformed percent-encoding. */
  path: string;
  headers?: Record<string, string>;
  body?: () => string | Buffer;
  /** Phase 0 runs first and one at a time (creates what later cases rely on). */
  phase?: 0 | 1;
}

export interface CorpusContext {
  /** The project API key (public). */
  token: string;
  /** A personal API key with every scope. */
  personalKey: string;
  projectId: number;
  userUuid: string;
}

const MB = 1024 * 1024;
// Every path capture serves, from the edge's routing (derived from capture's route table).
const CAPTURE_PATHS = EDGE_ROUTING.routes.filter((r) => r.service === 'capture').map((r) => `${r.path}/`);
const DECIDE_PATHS = ['/decide/?v=4', '/flags/?v=2', '/decide/?v=3', '/decide/'];
const JSON_HEADERS = { 'content-type': 'application/json' };
const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' };

export function buildCorpus(ctx: CorpusContext): HostileCase[] {
  const cases: HostileCase[] = [];
  const tok = JSON.stringify(ctx.token);
  const auth = { authorization: `Bearer ${ctx.personalKey}` };
  const flagsBase = `/api/projects/${ctx.projectId}/feature_flags/`;
  const eafBase = `/api/projects/${ctx.projectId}/early_access_feature/`;
  const userPath = `/api/users/${ctx.userUuid}/`;
  let seq = 0;
  const add = (c: HostileCase) => {
    cases.push({ headers: {}, phase: 1, ...c });
  };
  const capture = (
    cls: CaseClass,
    name: string,
    body: () => string | Buffer,
    path = '/i/v0/e/',
    headers: Record<string, string> = JSON_HEADERS,
  ) =>
    add({
      cls,
      service: 'capture',
      name: `${cls} capture POST ${path} ${name}`,
      method: 'POST',
      path,
      headers,
      body,
    });
  const decide = (
    cls: CaseClass,
    name: string,
    body: () => string | Buffer,
    path = '/decide/?v=4',
    headers: Record<string, string> = JSON_HEADERS,
  ) =>
    add({
      cls,
      service: 'decide',
      name: `${cls} decide POST ${path} ${name}`,
      method: 'POST',
      path,
      headers,
      body,
    });
  const mgmt = (
    cls: CaseClass,
    method: string,
    path: string,
    name: string,
    body?: () => string | Buffer,
    headers: Record<string, string> = auth,
  ) =>
    add({
      cls,
      service: 'management',
      name: `${cls} management ${method} ${path.length > 120 ? path.slice(0, 120) + '…' : path} ${name}`.trim(),
      method,
      path,
      headers: body ? { ...JSON_HEADERS, ...headers } : headers,
      body,
    });
  /** A capture event body; `fields` is raw JSON text for the members after the api key. */
  const ev = (fields: string) => `{"api_key":${tok},${fields}}`;
  const evProps = (props: string, event = '"hostile"') =>
    ev(`"event":${event},"distinct_id":"h-${++seq}","properties":${props}`);
  const dec = (fields: string) => `{"api_key":${tok},${fields}}`;
  const flagBody = (filters: string, key = `hostile-${++seq}`) =>
    `{"key":"${key}","name":"hostile","filters":${filters}}`;
  const propFilter = (value: string, operator = 'exact', key = 'email') =>
    `{"groups":[{"properties":[{"key":"${key}","value":${value},"operator":"${operator}","type":"person"}],"rollout_percentage":100}]}`;

  // ---- depth ---------------------------------------------------------------------------------
  for (const depth of DEPTHS) {
    for (const { shape, build } of DEEP_SHAPES) {
      const d = () => build(depth);
      const tag = `${shape} ${depth} deep`;
      capture('depth', `properties.deep ${tag}`, () => evProps(`{"deep":${d()}}`));
      capture('depth', `$set ${tag}`, () => evProps(`{"$set":{"deep":${d()}}}`, '"$identify"'));
      capture('depth', `$set itself ${tag}`, () => evProps(`{"$set":${d()}}`, '"$identify"'));
      capture('depth', `properties itself ${tag}`, () => evProps(d()));
      capture('depth', `distinct_id ${tag}`, () => ev(`"event":"e","distinct_id":${d()}`));
      capture('depth', `whole body ${tag}`, d);
      capture(
        'depth',
        `batch item properties ${tag}`,
        () => ev(`"batch":[{"event":"e","distinct_id":"d","properties":{"deep":${d()}}}]`),
        '/batch/',
      );
      capture('depth', `batch itself ${tag}`, () => ev(`"batch":${d()}`), '/batch/');
      decide('depth', `person_properties ${tag}`, () =>
        dec(`"distinct_id":"d","person_properties":{"p":${d()}}`),
      );
      decide('depth', `person_properties itself ${tag}`, () =>
        dec(`"distinct_id":"d","person_properties":${d()}`),
      );
      decide('depth', `groups ${tag}`, () => dec(`"distinct_id":"d","groups":{"company":${d()}}`));
      decide('depth', `group_properties ${tag}`, () =>
        dec(`"distinct_id":"d","groups":{"company":"c"},"group_properties":{"company":{"p":${d()}}}}`),
      );
      decide('depth', `distinct_id ${tag}`, () => dec(`"distinct_id":${d()}`));
      decide('depth', `whole body ${tag}`, d);
      mgmt('depth', 'POST', flagsBase, `flag filter value ${tag}`, () => flagBody(propFilter(d())));
      mgmt('depth', 'POST', flagsBase, `flag filters itself ${tag}`, () => flagBody(d()));
      mgmt('depth', 'POST', flagsBase, `flag payload ${tag}`, () =>
        flagBody(`{"groups":[{"rollout_percentage":100}],"payloads":{"true":${d()}}}`),
      );
      mgmt('depth', 'PATCH', userPath, `hedgehog_config ${tag}`, () => `{"hedgehog_config":${d()}}`);
      mgmt(
        'depth',
        'PATCH',
        userPath,
        `notification_settings ${tag}`,
        () => `{"notification_settings":{"x":${d()}}}`,
      );
      mgmt(
        'depth',
        'PATCH',
        userPath,
        `events_column_config ${tag}`,
        () => `{"events_column_config":${d()}}`,
      );
      mgmt(
        'depth',
        'PATCH',
        userPath,
        `has_seen_product_intro_for ${tag}`,
        () => `{"has_seen_product_intro_for":${d()}}`,
      );
      mgmt(
        'depth',
        'PATCH',
        `${userPath}hedgehog_config/`,
        `body ${tag}`,
        () => `{"hedgehog_config":${d()}}`,
      );
      mgmt('depth', 'PATCH', userPath, `whole body ${tag}`, d);
      mgmt('depth', 'POST', eafBase, `name ${tag}`, () => `{"name":${d()},"stage":"draft"}`);
    }
  }

  // ---- encoding ------------------------------------------------------------------------------
  for (const { label, escaped } of UNSTORABLE_ESCAPES) {
    const s = `"${escaped}"`;
    capture('encoding', `event name ${label}`, () => ev(`"event":${s},"distinct_id":"d"`));
    capture('encoding', `distinct_id ${label}`, () => ev(`"event":"e","distinct_id":${s}`));
    capture('encoding', `property key ${label}`, () => evProps(`{${s}:1}`));
    capture('encoding', `property value ${label}`, () => evProps(`{"p":${s}}`));
    capture('encoding', `$set key and value ${label}`, () => evProps(`{"$set":{${s}:${s}}}`, '"$identify"'));
    capture('encoding', `alias ${label}`, () => evProps(`{"alias":${s}}`, '"$create_alias"'));
    capture('encoding', `$groups ${label}`, () => evProps(`{"$groups":{${s}:${s}}}`));
    capture('encoding', `$groupidentify ${label}`, () =>
      evProps(`{"$group_type":${s},"$group_key":${s},"$group_set":{${s}:${s}}}`, '"$groupidentify"'),
    );
    capture('encoding', `api_key ${label}`, () => `{"api_key":${s},"event":"e","distinct_id":"d"}`);
    capture('encoding', `uuid ${label}`, () => ev(`"event":"e","distinct_id":"d","uuid":${s}`));
    capture(
      'encoding',
      `batch item ${label}`,
      () => ev(`"batch":[{"event":${s},"distinct_id":${s},"properties":{${s}:${s}}}]`),
      '/batch/',
    );
    decide('encoding', `distinct_id ${label}`, () => dec(`"distinct_id":${s}`));
    decide('encoding', `api_key ${label}`, () => `{"api_key":${s},"distinct_id":"d"}`);
    decide('encoding', `person_properties ${label}`, () =>
      dec(`"distinct_id":"d","person_properties":{${s}:${s}}`),
    );
    decide('encoding', `groups ${label}`, () =>
      dec(`"distinct_id":"d","groups":{${s}:${s}},"group_properties":{${s}:{${s}:${s}}}`),
    );
    mgmt('encoding', 'PATCH', userPath, `first_name ${label}`, () => `{"first_name":${s},"last_name":${s}}`);
    mgmt(
      'encoding',
      'PATCH',
      userPath,
      `modes ${label}`,
      () => `{"toolbar_mode":${s},"theme_mode":${s},"role_at_organization":${s}}`,
    );
    mgmt(
      'encoding',
      'PATCH',
      userPath,
      `notification_settings key ${label}`,
      () => `{"notification_settings":{${s}:${s}}}`,
    );
    mgmt('encoding', 'PATCH', userPath, `email ${label}`, () => `{"email":"a${escaped}@example.com"}`);
    mgmt(
      'encoding',
      'POST',
      flagsBase,
      `flag key and name ${label}`,
      () => `{"key":${s},"name":${s},"filters":{"groups":[{"rollout_percentage":100}]}}`,
    );
    mgmt('encoding', 'POST', flagsBase, `flag filter property ${label}`, () =>
      flagBody(
        `{"groups":[{"properties":[{"key":${s},"value":${s},"operator":"exact","type":"person"}],"rollout_percentage":100}]}`,
      ),
    );
    mgmt(
      'encoding',
      'POST',
      eafBase,
      `early access feature ${label}`,
      () =>
        `{"name":${s},"description":${s},"stage":"draft","documentation_url":"https://x.test/${escaped}"}`,
    );
    mgmt(
      'encoding',
      'POST',
      '/api/personal_api_keys/',
      `label ${label}`,
      () => `{"label":${s},"scopes":["user:read"]}`,
    );
  }
  for (const { label, bytes } of INVALID_UTF8) {
    const body = (template: string) => () => withBytes(template, bytes);
    capture(
      'encoding',
      `invalid UTF-8 ${label} in event name`,
      body(ev(`"event":"x{{BAD}}y","distinct_id":"d"`)),
    );
    capture(
      'encoding',
      `invalid UTF-8 ${label} in distinct_id`,
      body(ev(`"event":"e","distinct_id":"{{BAD}}"`)),
    );
    capture(
      'encoding',
      `invalid UTF-8 ${label} in property key`,
      body(ev(`"event":"e","distinct_id":"d","properties":{"{{BAD}}":1}`)),
    );
    capture(
      'encoding',
      `invalid UTF-8 ${label} outside strings`,
      body(ev(`"event":"e","distinct_id":"d"{{BAD}}`)),
    );
    capture(
      'encoding',
      `invalid UTF-8 ${label} in batch`,
      body(ev(`"batch":[{"event":"{{BAD}}","distinct_id":"{{BAD}}"}]`)),
      '/batch/',
    );
    decide('encoding', `invalid UTF-8 ${label} in distinct_id`, body(dec(`"distinct_id":"{{BAD}}"`)));
    decide(
      'encoding',
      `invalid UTF-8 ${label} in person_properties`,
      body(dec(`"distinct_id":"d","person_properties":{"email":"{{BAD}}"}`)),
    );
    mgmt(
      'encoding',
      'PATCH',
      userPath,
      `invalid UTF-8 ${label} in first_name`,
      body(`{"first_name":"{{BAD}}"}`),
    );
    mgmt(
      'encoding',
      'POST',
      flagsBase,
      `invalid UTF-8 ${label} in flag name`,
      body(flagBody('{"groups":[]}').replace('"hostile"', '"{{BAD}}"')),
    );
  }
  const badSegments = [
    'a%00b',
    '%00',
    '%ED%A0%80',
    '%E0%A4%A',
    '%',
    '%zz',
    '%C0%AF',
    '%FF%FE',
    '%uD800',
    '..%2F..%2F',
  ];
  for (const seg of badSegments) {
    mgmt('encoding', 'GET', `/api/users/${seg}/`, 'path segment');
    mgmt('encoding', 'PATCH', `/api/users/${seg}/`, 'path segment', () => '{"first_name":"x"}');
    mgmt('encoding', 'GET', `/api/users/${seg}/hedgehog_config/`, 'path segment');
    mgmt('encoding', 'GET', `/api/projects/${seg}/feature_flags/`, 'path segment');
    mgmt('encoding', 'GET', `${flagsBase}${seg}/`, 'path segment');
    mgmt('encoding', 'GET', `${eafBase}${seg}/`, 'path segment');
    mgmt('encoding', 'DELETE', `${eafBase}${seg}/`, 'path segment');
    mgmt(
      'encoding',
      'GET',
      `/api/projects/${ctx.projectId}/events/?event=${seg}&distinct_id=${seg}`,
      'query filter',
    );
    mgmt('encoding', 'GET', `/api/projects/${ctx.projectId}/persons/?distinct_id=${seg}`, 'query filter');
    mgmt('encoding', 'GET', `/api/projects/${ctx.projectId}/events/?cursor=${seg}`, 'query cursor');
    mgmt('encoding', 'GET', `/api/users/?is_staff=${seg}&limit=${seg}`, 'query filter');
    capture(
      'encoding',
      `query ?compression=${seg}`,
      () => evProps('{}'),
      `/i/v0/e/?compression=${seg}&_=${seg}`,
    );
    decide(
      'encoding',
      `query v=${seg}`,
      () => dec('"distinct_id":"d"'),
      `/decide/?v=${seg}&compression=${seg}`,
    );
    add({
      cls: 'encoding',
      service: 'capture',
      name: `encoding capture POST /i/v0/e/${seg} path segment`,
      method: 'POST',
      path: `/i/v0/e/${seg}`,
      headers: JSON_HEADERS,
      body: () => evProps('{}'),
    });
  }
  for (const xff of [
    'garbage',
    '999.999.999.999',
    '::ffff:999.1.1.1',
    'a'.repeat(8000),
    '1.2.3.4, \t, ,',
    '[::1]:80',
    '%00',
    '0x7f.1',
  ]) {
    const name = `X-Forwarded-For ${JSON.stringify(xff.length > 40 ? xff.slice(0, 20) + '…' : xff)}`;
    capture('encoding', name, () => evProps('{}'), '/i/v0/e/', { ...JSON_HEADERS, 'x-forwarded-for': xff });
    decide('encoding', name, () => dec('"distinct_id":"d"'), '/decide/?v=4', {
      ...JSON_HEADERS,
      'x-forwarded-for': xff,
    });
  }

  // ---- size ----------------------------------------------------------------------------------
  capture(
    'size',
    'body of exactly 20 MB (the limit)',
    () =>
      ev(`"batch":[{"event":"e","distinct_id":"d","properties":{"x":"`) + 'a'.repeat(20 * MB - 200) + '"}}]}',
    '/batch/',
  );
  capture('size', 'single 5 MB string property', () => evProps(`{"x":"${'a'.repeat(5 * MB)}"}`));
  capture('size', 'single 900 KB string property', () => evProps(`{"x":"${'a'.repeat(900 * 1024)}"}`));
  capture('size', '5 MB event name', () => ev(`"event":"${'e'.repeat(5 * MB)}","distinct_id":"d"`));
  capture('size', '500 KB distinct_id', () => ev(`"event":"e","distinct_id":"${'d'.repeat(500 * 1024)}"`));
  capture('size', '100k-element array property', () =>
    evProps(`{"arr":[${new Array(100_000).fill(1).join(',')}]}`),
  );
  capture('size', '100k keys in properties', () =>
    evProps(`{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":1`).join(',')}}`),
  );
  capture('size', '20k keys in $set', () =>
    evProps(`{"$set":{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":1`).join(',')}}}`, '"$identify"'),
  );
  capture(
    'size',
    'batch of 3000 events',
    () => ev(`"batch":[${new Array(3000).fill('{"event":"e","distinct_id":"many"}').join(',')}]`),
    '/batch/',
  );
  capture(
    'size',
    'batch of 100k empty objects',
    () => ev(`"batch":[${new Array(100_000).fill('{}').join(',')}]`),
    '/batch/',
  );
  capture('size', '10 MB of whitespace', () => ' '.repeat(10 * MB) + evProps('{}'));
  decide('size', 'body over 1 MB', () =>
    dec(`"distinct_id":"d","person_properties":{"x":"${'a'.repeat(MB + 10)}"}`),
  );
  decide('size', '900 KB person property', () =>
    dec(`"distinct_id":"d","person_properties":{"email":"${'a'.repeat(900 * 1024)}"}`),
  );
  decide('size', '50k person_properties keys', () =>
    dec(
      `"distinct_id":"d","person_properties":{${Array.from({ length: 50_000 }, (_, i) => `"k${i}":1`).join(',')}}`,
    ),
  );
  decide('size', '100k-element array property', () =>
    dec(`"distinct_id":"d","person_properties":{"arr":[${new Array(100_000).fill(1).join(',')}]}`),
  );
  decide('size', '10k groups', () =>
    dec(`"distinct_id":"d","groups":{${Array.from({ length: 10_000 }, (_, i) => `"g${i}":"k"`).join(',')}}`),
  );
  decide('size', '500 KB distinct_id', () => dec(`"distinct_id":"${'d'.repeat(500 * 1024)}"`));
  mgmt(
    'size',
    'PATCH',
    userPath,
    '100k-element hedgehog_config',
    () => `{"hedgehog_config":[${new Array(100_000).fill(1).join(',')}]}`,
  );
  mgmt('size', 'PATCH', userPath, '1 MB first_name', () => `{"first_name":"${'a'.repeat(MB)}"}`);
  mgmt(
    'size',
    'PATCH',
    userPath,
    '5 MB hedgehog_config string',
    () => `{"hedgehog_config":"${'a'.repeat(5 * MB)}"}`,
  );
  mgmt(
    'size',
    'PATCH',
    userPath,
    '50k notification_settings keys',
    () => `{"notification_settings":{${Array.from({ length: 50_000 }, (_, i) => `"k${i}":true`).join(',')}}}`,
  );
  mgmt('size', 'POST', flagsBase, '10k condition groups', () =>
    flagBody(`{"groups":[${new Array(10_000).fill('{"rollout_percentage":1}').join(',')}]}`),
  );
  mgmt('size', 'POST', flagsBase, '10k properties in one group', () =>
    flagBody(
      `{"groups":[{"properties":[${new Array(10_000).fill('{"key":"k","value":"v","operator":"exact","type":"person"}').join(',')}]}]}`,
    ),
  );
  mgmt('size', 'POST', flagsBase, '100k-character key', () => flagBody('{"groups":[]}', 'k'.repeat(100_000)));
  mgmt('size', 'POST', flagsBase, '2000 variants', () =>
    flagBody(
      `{"groups":[{"rollout_percentage":100}],"multivariate":{"variants":[${Array.from({ length: 2000 }, (_, i) => `{"key":"v${i}","rollout_percentage":0.05}`).join(',')}]}}`,
    ),
  );
  mgmt(
    'size',
    'POST',
    eafBase,
    '1 MB description',
    () => `{"name":"n","stage":"draft","description":"${'a'.repeat(MB)}"}`,
  );
  mgmt('size', 'PATCH', userPath, '30 MB body', () => `{"hedgehog_config":"${'a'.repeat(30 * MB)}"}`);

  // ---- compression bombs ---------------------------------------------------------------------
  const eventPrefix = `{"api_key":${tok},"event":"bomb","distinct_id":"d","properties":{"x":"`;
  const gzipHeaders = { ...JSON_HEADERS, 'content-encoding': 'gzip' };
  const plainText = { 'content-type': 'text/plain' };
  for (const path of ['/i/v0/e/', '/batch/']) {
    capture(
      'bomb',
      'Content-Encoding gzip inflating to 150 MB of JSON',
      () => gzipBomb({ prefix: eventPrefix, fillBytes: 150 * MB, suffix: '"}}' }),
      path,
      gzipHeaders,
    );
    capture(
      'bomb',
      '?compression=gzip-js inflating to 150 MB',
      () => gzipBomb({ prefix: eventPrefix, fillBytes: 150 * MB, suffix: '"}}' }),
      `${path}?compression=gzip-js`,
      plainText,
    );
    capture(
      'bomb',
      'gzip magic bytes only (no hint) inflating to 150 MB of zeros',
      () => gzipBomb({ fill: '\0', fillBytes: 150 * MB }),
      path,
      plainText,
    );
    capture(
      'bomb',
      'lz64 form data inflating to 150M characters',
      () => `data=${encodeURIComponent(lz64Bomb(150_000_000))}&compression=lz64`,
      path,
      FORM_HEADERS,
    );
    capture(
      'bomb',
      'lz64 with ?compression=lz64 inflating to 150M characters',
      () => `data=${encodeURIComponent(lz64Bomb(150_000_000))}`,
      `${path}?compression=lz64`,
      FORM_HEADERS,
    );
    capture(
      'bomb',
      'base64 data= of a gzip bomb with compression=gzip-js',
      () =>
        `data=${encodeURIComponent(gzipBomb({ prefix: eventPrefix, fillBytes: 150 * MB, suffix: '"}}' }).toString('base64'))}&compression=gzip-js`,
      path,
      FORM_HEADERS,
    );
  }
  capture(
    'bomb',
    'gzip inflating to 30 MB (over the wire limit, under the inflate cap)',
    () => gzipBomb({ prefix: eventPrefix, fillBytes: 30 * MB, suffix: '"}}' }),
    '/batch/',
    gzipHeaders,
  );
  capture(
    'bomb',
    'double gzip inflating to 150 MB',
    () => gzipOne(gzipBomb({ prefix: eventPrefix, fillBytes: 150 * MB, suffix: '"}}' })),
    '/i/v0/e/',
    gzipHeaders,
  );
  decide(
    'bomb',
    'Content-Encoding gzip inflating to 50 MB',
    () =>
      gzipBomb({
        prefix: `{"api_key":${tok},"distinct_id":"d","person_properties":{"x":"`,
        fillBytes: 50 * MB,
        suffix: '"}}',
      }),
    '/decide/?v=4',
    gzipHeaders,
  );
  decide(
    'bomb',
    '?compression=gzip-js inflating to 50 MB',
    () => gzipBomb({ fillBytes: 50 * MB }),
    '/decide/?v=4&compression=gzip-js',
    plainText,
  );
  decide(
    'bomb',
    'lz64 form data inflating to 50M characters',
    () => `data=${encodeURIComponent(lz64Bomb(50_000_000))}&compression=lz64`,
    '/decide/?v=4',
    FORM_HEADERS,
  );
  decide(
    'bomb',
    'lz64 ?compression=lz64 inflating to 50M characters',
    () => `data=${encodeURIComponent(lz64Bomb(50_000_000))}`,
    '/flags/?v=2&compression=lz64',
    FORM_HEADERS,
  );
  decide(
    'bomb',
    'base64 data= of 2 MB JSON',
    () => `data=${Buffer.from(dec(`"distinct_id":"${'d'.repeat(2 * MB)}"`)).toString('base64')}`,
    '/decide/?v=4',
    FORM_HEADERS,
  );
  // Broken and odd compressed bodies, for both public services.
  const sample = Buffer.from(evProps('{"p":1}'));
  const gz = gzipOne(sample);
  const corrupt = Buffer.from(gz);
  const mid = Math.floor(corrupt.length / 2);
  corrupt[mid] = corrupt[mid]! ^ 0xff;
  const badCrc = Buffer.from(gz);
  badCrc[badCrc.length - 6] = badCrc[badCrc.length - 6]! ^ 0xff;
  const broken: Array<[string, () => Buffer | string, Record<string, string>, string]> = [
    ['truncated gzip', () => gz.subarray(0, Math.floor(gz.length / 2)), gzipHeaders, ''],
    ['corrupt gzip', () => corrupt, gzipHeaders, ''],
    ['gzip with bad CRC', () => badCrc, gzipHeaders, ''],
    ['gzip magic only', () => Buffer.from([0x1f, 0x8b]), gzipHeaders, ''],
    ['gzip of non-JSON text', () => gzipOne('hello, world'), gzipHeaders, ''],
    [
      'gzip of random bytes',
      () => gzipOne(Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))),
      gzipHeaders,
      '',
    ],
    ['gzip of 100k-deep array', () => gzipOne(DEEP_SHAPES[0]!.build(100_000)), gzipHeaders, ''],
    ['gzip of empty input', () => gzipOne(''), gzipHeaders, ''],
    ['gzip-js hint on plain JSON', () => evProps('{}'), plainText, '?compression=gzip-js'],
    ['Content-Encoding gzip on plain JSON', () => evProps('{}'), gzipHeaders, ''],
    ['Content-Encoding br', () => evProps('{}'), { ...JSON_HEADERS, 'content-encoding': 'br' }, ''],
    [
      'Content-Encoding deflate with gzip data',
      () => gz,
      { ...JSON_HEADERS, 'content-encoding': 'deflate' },
      '',
    ],
    [
      'Content-Encoding gzip, gzip',
      () => gzipOne(gz),
      { ...JSON_HEADERS, 'content-encoding': 'gzip, gzip' },
      '',
    ],
    ['lz64 of garbage', () => 'data=%%%%&compression=lz64', FORM_HEADERS, ''],
    [
      'lz64 truncated',
      () => `data=${encodeURIComponent(lz64Bomb(100_000).slice(0, 50))}&compression=lz64`,
      FORM_HEADERS,
      '',
    ],
    [
      'lz64 of 1M characters (not JSON)',
      () => `data=${encodeURIComponent(lz64Bomb(1_000_000))}&compression=lz64`,
      FORM_HEADERS,
      '',
    ],
    ['base64 data= of garbage', () => 'data=!!!!****', FORM_HEADERS, ''],
    [
      'base64 data= of invalid UTF-8',
      () => `data=${Buffer.from([0xff, 0xfe, 0xfd]).toString('base64')}`,
      FORM_HEADERS,
      '',
    ],
    [
      'base64 data= of a 100k-deep array',
      () => `data=${Buffer.from(DEEP_SHAPES[1]!.build(100_000)).toString('base64')}`,
      FORM_HEADERS,
      '',
    ],
    [
      'bare base64 body',
      () => Buffer.from(evProps('{}')).toString('base64'),
      plainText,
      '?compression=base64',
    ],
    ['form with 10k data fields', () => new Array(10_000).fill('data=e30%3D').join('&'), FORM_HEADERS, ''],
  ];
  for (const [name, body, headers, query] of broken) {
    capture('bomb', name, body, `/i/v0/e/${query}`, headers);
    decide('bomb', name, body, `/decide/?v=4${query ? '&' + query.slice(1) : ''}`, headers);
  }

  // ---- types ---------------------------------------------------------------------------------
  const wrongValues = [
    '1',
    'true',
    'false',
    'null',
    '{}',
    '[]',
    '[1]',
    '{"a":1}',
    '1e400',
    '-0',
    '"NaN"',
    '2147483648',
    '9007199254740993',
    '-9223372036854775809',
    '""',
    '" "',
  ];
  for (const v of wrongValues) {
    capture('types', `event=${v}`, () => ev(`"event":${v},"distinct_id":"d"`));
    capture('types', `distinct_id=${v}`, () => ev(`"event":"e","distinct_id":${v}`));
    capture('types', `api_key=${v}`, () => `{"api_key":${v},"event":"e","distinct_id":"d"}`);
    capture('types', `properties=${v}`, () => ev(`"event":"e","distinct_id":"d","properties":${v}`));
    capture('types', `timestamp=${v}`, () => ev(`"event":"e","distinct_id":"d","timestamp":${v}`));
    capture('types', `uuid=${v}`, () => ev(`"event":"e","distinct_id":"d","uuid":${v}`));
    capture('types', `$set=${v}`, () =>
      evProps(`{"$set":${v},"$set_once":${v},"$unset":${v}}`, '"$identify"'),
    );
    capture('types', `$groups=${v}`, () => evProps(`{"$groups":${v}}`));
    capture(
      'types',
      `historical_migration=${v}`,
      () => ev(`"historical_migration":${v},"batch":[{"event":"e","distinct_id":"d"}]`),
      '/batch/',
    );
    capture('types', `batch=${v}`, () => ev(`"batch":${v}`), '/batch/');
    capture('types', `batch item=${v}`, () => ev(`"batch":[${v}]`), '/batch/');
    decide('types', `distinct_id=${v}`, () => dec(`"distinct_id":${v}`));
    decide('types', `api_key=${v}`, () => `{"api_key":${v},"distinct_id":"d"}`);
    decide('types', `person_properties=${v}`, () => dec(`"distinct_id":"d","person_properties":${v}`));
    decide('types', `groups=${v}`, () => dec(`"distinct_id":"d","groups":${v}`));
    decide('types', `group_properties=${v}`, () =>
      dec(`"distinct_id":"d","groups":{"company":"c"},"group_properties":${v}`),
    );
    decide('types', `groups.company=${v}`, () =>
      dec(`"distinct_id":"d","groups":{"company":${v}},"group_properties":{"company":${v}}`),
    );
    mgmt('types', 'PATCH', userPath, `first_name=${v}`, () => `{"first_name":${v}}`);
    mgmt(
      'types',
      'PATCH',
      userPath,
      `is_staff=${v} anonymize_data=${v}`,
      () => `{"is_staff":${v},"anonymize_data":${v}}`,
    );
    mgmt('types', 'PATCH', userPath, `set_current_team=${v}`, () => `{"set_current_team":${v}}`);
    mgmt(
      'types',
      'PATCH',
      userPath,
      `set_current_organization=${v}`,
      () => `{"set_current_organization":${v}}`,
    );
    mgmt('types', 'PATCH', userPath, `scene_personalisation=${v}`, () => `{"scene_personalisation":${v}}`);
    mgmt('types', 'POST', flagsBase, `flag key=${v}`, () => `{"key":${v},"filters":{"groups":[]}}`);
    mgmt('types', 'POST', flagsBase, `filters=${v}`, () => flagBody(v));
    mgmt('types', 'POST', flagsBase, `rollout_percentage=${v}`, () =>
      flagBody(`{"groups":[{"rollout_percentage":${v}}]}`),
    );
    mgmt('types', 'POST', flagsBase, `aggregation_group_type_index=${v}`, () =>
      flagBody(`{"groups":[],"aggregation_group_type_index":${v}}`),
    );
    mgmt('types', 'POST', flagsBase, `multivariate=${v}`, () =>
      flagBody(`{"groups":[],"multivariate":${v}}`),
    );
    mgmt(
      'types',
      'POST',
      eafBase,
      `feature_flag_id=${v}`,
      () => `{"name":"n","stage":"draft","feature_flag_id":${v}}`,
    );
    mgmt('types', 'POST', eafBase, `stage=${v}`, () => `{"name":"n","stage":${v}}`);
  }
  for (const body of [
    'null',
    '[]',
    '1',
    '"s"',
    'true',
    '[null]',
    '[1,2]',
    '{}',
    '',
    '{',
    '{"a":1}}',
    '{"a":1,}',
    'NaN',
    '{"__proto__":null}',
  ]) {
    capture('types', `whole body ${JSON.stringify(body)}`, () => body);
    capture('types', `whole body ${JSON.stringify(body)}`, () => body, '/batch/');
    decide('types', `whole body ${JSON.stringify(body)}`, () => body);
    mgmt('types', 'PATCH', userPath, `whole body ${JSON.stringify(body)}`, () => body);
    mgmt('types', 'POST', flagsBase, `whole body ${JSON.stringify(body)}`, () => body);
  }
  const protoBodies: Array<[string, string]> = [
    ['__proto__ in properties', '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}'],
    [
      '__proto__ in $set',
      '{"$set":{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}},"toString":1,"hasOwnProperty":1}}',
    ],
    ['toString/valueOf keys', '{"toString":"x","valueOf":{},"hasOwnProperty":null}'],
  ];
  for (const [name, props] of protoBodies) capture('types', name, () => evProps(props, '"$identify"'));
  capture(
    'types',
    '__proto__ at top level',
    () => `{"__proto__":{"api_key":${tok}},"event":"e","distinct_id":"d"}`,
  );
  capture('types', 'event=__proto__ distinct_id=constructor', () =>
    ev('"event":"__proto__","distinct_id":"constructor"'),
  );
  capture('types', 'distinct_id=__proto__ with $create_alias to constructor', () =>
    ev('"event":"$create_alias","distinct_id":"__proto__","properties":{"alias":"constructor"}}'),
  );
  decide('types', '__proto__ person_properties', () =>
    dec('"distinct_id":"d","person_properties":{"__proto__":{"email":"x"},"constructor":{"prototype":{}}}'),
  );
  decide('types', '__proto__ groups', () =>
    dec(
      '"distinct_id":"__proto__","groups":{"__proto__":"x","constructor":"y"},"group_properties":{"__proto__":{"a":1}}',
    ),
  );
  decide('types', '__proto__ at top level', () => `{"__proto__":{"api_key":${tok},"distinct_id":"d"}}`);
  mgmt(
    'types',
    'PATCH',
    userPath,
    '__proto__ is_staff',
    () => '{"__proto__":{"is_staff":true},"constructor":{"prototype":{"is_staff":true}}}',
  );
  mgmt(
    'types',
    'PATCH',
    userPath,
    '__proto__ notification_settings',
    () => '{"notification_settings":{"__proto__":{"x":1}},"hedgehog_config":{"__proto__":{"x":1}}}',
  );
  mgmt('types', 'POST', flagsBase, '__proto__ in filters and payloads', () =>
    flagBody(
      '{"groups":[{"__proto__":{"rollout_percentage":100}}],"payloads":{"__proto__":"x"},"__proto__":{"groups":[]}}',
    ),
  );
  for (const q of [
    'limit=1e400',
    'limit=-1',
    'limit=9999999999999999999',
    'limit=0',
    'limit=NaN',
    'offset=-0',
    'offset=9007199254740993',
    'offset=1e400',
    'limit=1&limit=2',
    'limit[]=1',
    'limit[a]=1',
    'is_staff=maybe',
    'offset=' + '9'.repeat(1000),
  ]) {
    mgmt('types', 'GET', `/api/users/?${q}`, 'query');
    mgmt('types', 'GET', `${flagsBase}?${q}`, 'query');
    mgmt('types', 'GET', `${eafBase}?${q}`, 'query');
    mgmt('types', 'GET', `/api/projects/${ctx.projectId}/persons/?${q}`, 'query');
  }
  for (const id of [
    '99999999999999999999',
    '1e400',
    '-0',
    '-1',
    '0',
    '0x10',
    '1.5',
    'NaN',
    '9007199254740993',
    '@current',
    '__proto__',
  ]) {
    mgmt('types', 'GET', `/api/projects/${id}/`, 'project id');
    mgmt('types', 'GET', `/api/projects/${id}/feature_flags/`, 'project id');
    mgmt(
      'types',
      'POST',
      `/api/projects/${id}/early_access_feature/`,
      'project id',
      () => '{"name":"n","stage":"draft"}',
    );
    mgmt('types', 'GET', `${flagsBase}${id}/`, 'flag id');
    mgmt('types', 'PATCH', `${flagsBase}${id}/`, 'flag id', () => '{"name":"x"}');
  }
  for (const v of ['1e400', '-1', '99999999999999999999', '4&v=3', 'abc', ''])
    decide('types', `v=${v}`, () => dec('"distinct_id":"d"'), `/decide/?v=${v}`);

  // ---- time ----------------------------------------------------------------------------------
  const badTimes = [
    '-271821-04-20T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '+275760-09-13T00:00:00.001Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '0001-01-01T00:00:00Z',
    '2024-02-30T00:00:00Z',
    '2024-01-01T25:61:61Z',
    'yesterday',
    '',
    '1e400',
    '99999999999999999999',
    '2024-01-01T00:00:00+99:99',
    '\\u0000',
  ];
  for (const t of badTimes) {
    capture('time', `timestamp ${JSON.stringify(t)}`, () =>
      ev(`"event":"e","distinct_id":"d","timestamp":"${t}"`),
    );
    capture('time', `sent_at ${JSON.stringify(t)}`, () =>
      ev(`"event":"e","distinct_id":"d","sent_at":"${t}","timestamp":"2024-01-01T00:00:00Z"`),
    );
    capture(
      'time',
      `historical timestamp ${JSON.stringify(t)}`,
      () => ev(`"historical_migration":true,"batch":[{"event":"e","distinct_id":"d","timestamp":"${t}"}]`),
      '/batch/',
    );
    mgmt(
      'time',
      'GET',
      `/api/projects/${ctx.projectId}/events/?after=${encodeURIComponent(t)}&before=${encodeURIComponent(t)}`,
      'event filter',
    );
  }
  for (const offset of ['1e400', '-1e400', '9007199254740993', '-8640000000000001', '"x"', 'null', '{}']) {
    capture('time', `offset=${offset}`, () => ev(`"event":"e","distinct_id":"d","offset":${offset}`));
    capture('time', `properties.offset=${offset}`, () => evProps(`{"offset":${offset}}`));
  }
  for (const q of [
    '_=garbage',
    '_=-99999999999999',
    '_=1e400',
    '_=99999999999999999999',
    '_=%00',
    '_=8640000000000001',
    'ver=%00&_=NaN',
  ]) {
    capture('time', `query ${q}`, () => evProps('{}'), `/i/v0/e/?${q}`);
  }
  capture('time', 'sent_at far past with a current timestamp', () =>
    ev(
      `"event":"e","distinct_id":"d","sent_at":"0001-01-01T00:00:00Z","timestamp":"${new Date().toISOString()}"`,
    ),
  );
  capture('time', 'sent_at far future with a past timestamp', () =>
    ev(
      `"event":"e","distinct_id":"d","sent_at":"+275760-09-13T00:00:00Z","timestamp":"-271821-04-20T00:00:00Z"`,
    ),
  );
  decide('time', 'relative date filter values in person_properties', () =>
    dec(
      '"distinct_id":"d","person_properties":{"created":"-271821-04-20T00:00:00Z","last":"+275760-09-13T00:00:00Z"}',
    ),
  );

  // ---- auth ----------------------------------------------------------------------------------
  const keys: Array<[string, string | undefined]> = [
    ['missing api_key', undefined],
    ['empty api_key', '""'],
    ['personal key as api_key', JSON.stringify(ctx.personalKey)],
    ['unknown phc_ key', '"phc_doesnotexist0000000000000000000000000"'],
    ['1 KB key', JSON.stringify('phc_' + 'x'.repeat(1024))],
    ['100 KB key', JSON.stringify('phc_' + 'x'.repeat(100 * 1024))],
    ['key with spaces and SQL', `"phc_' OR 1=1 --"`],
    ['key with NUL', '"phc_\\u0000"'],
    ['key padded with whitespace', JSON.stringify(` ${ctx.token} `)],
    ['key in upper case', JSON.stringify(ctx.token.toUpperCase())],
    ['key "null"', '"null"'],
  ];
  for (const [name, key] of keys) {
    const head = key === undefined ? '' : `"api_key":${key},`;
    capture('auth', name, () => `{${head}"event":"e","distinct_id":"d"}`);
    capture('auth', name, () => `{${head}"batch":[{"event":"e","distinct_id":"d"}]}`, '/batch/');
    capture(
      'auth',
      `${name} as token in properties`,
      () => `{"event":"e","distinct_id":"d","properties":{"token":${key ?? 'null'}}}`,
    );
    decide('auth', name, () => `{${head}"distinct_id":"d"}`);
    decide('auth', name, () => `{${head}"distinct_id":"d"}`, '/flags/?v=2');
  }
  capture(
    'auth',
    'token and api_key disagree',
    () => `{"api_key":"phc_unknown","token":${tok},"event":"e","distinct_id":"d"}`,
  );
  const bearers: Array<[string, Record<string, string>]> = [
    ['no Authorization', {}],
    ['Bearer without token', { authorization: 'Bearer' }],
    ['Bearer and a space', { authorization: 'Bearer ' }],
    ['garbage bearer', { authorization: 'Bearer garbage' }],
    ['project key as bearer', { authorization: `Bearer ${ctx.token}` }],
    ['unknown phx_ key', { authorization: 'Bearer phx_doesnotexist00000000000000000000000000' }],
    ['Basic auth', { authorization: 'Basic YWRtaW46YWRtaW4=' }],
    ['10 KB bearer', { authorization: `Bearer phx_${'x'.repeat(10 * 1024)}` }],
    ['lower-case bearer scheme', { authorization: `bearer ${ctx.personalKey}x` }],
    ['two bearer tokens', { authorization: `Bearer ${ctx.personalKey} ${ctx.personalKey}` }],
    ['key with non-ASCII', { authorization: 'Bearer phx_\u00ff\u00fe' }],
    ['personal_api_key query garbage', {}],
  ];
  for (const [name, headers] of bearers) {
    const q = name.startsWith('personal_api_key') ? '?personal_api_key=garbage' : '';
    mgmt('auth', 'GET', `/api/users/@me/${q}`, name, undefined, headers);
    mgmt('auth', 'GET', `/api/projects/${q}`, name, undefined, headers);
    mgmt('auth', 'POST', `${flagsBase}${q}`, name, () => flagBody('{"groups":[]}'), headers);
    mgmt('auth', 'PATCH', `${userPath}${q}`, name, () => '{"is_staff":true}', headers);
    mgmt('auth', 'POST', `/api/personal_api_keys/${q}`, name, () => '{"label":"x","scopes":["*"]}', headers);
  }

  // ---- methods and paths ---------------------------------------------------------------------
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    for (const path of CAPTURE_PATHS)
      add({
        cls: 'paths',
        service: 'capture',
        name: `paths capture ${method} ${path}`,
        method,
        path,
        headers: JSON_HEADERS,
        body: method === 'GET' || method === 'OPTIONS' ? undefined : () => evProps('{}'),
      });
    for (const path of DECIDE_PATHS)
      add({
        cls: 'paths',
        service: 'decide',
        name: `paths decide ${method} ${path}`,
        method,
        path,
        headers: JSON_HEADERS,
        body: method === 'GET' || method === 'OPTIONS' ? undefined : () => dec('"distinct_id":"d"'),
      });
  }
  for (const method of ['PUT', 'POST', 'TRACE']) {
    mgmt('paths', method, userPath, `wrong method ${method}`);
    mgmt('paths', method, `/api/projects/${ctx.projectId}/`, `wrong method ${method}`);
    mgmt('paths', method, `/api/projects/${ctx.projectId}/events/`, `wrong method ${method}`);
  }
  for (const path of [
    '//i/v0/e/',
    '/i//v0/e/',
    '/i/v0/e//',
    '/batch//',
    '/./batch/',
    '/i/v0/e/..',
    '/i/v0/e/?',
    '/i/v0/e/?&&&==&',
    '/i/v0/e/#x',
  ]) {
    capture('paths', 'odd path', () => evProps('{}'), path);
  }
  for (const path of [
    '//decide/?v=4',
    '/decide//?v=4',
    '/decide/?v=4&v=4&v=3',
    '/decide/?v[]=4',
    '/decide/?v[a]=4',
  ]) {
    decide('paths', 'odd path', () => dec('"distinct_id":"d"'), path);
  }
  for (const path of [
    '//api/users/@me/',
    '/api//users/@me/',
    '/api/users/@me//',
    '/api/users/@me',
    '/api/users/./@me/',
    '/api/users/%40me/',
    '/api/users/@ME/',
    `/api/projects/${ctx.projectId}//feature_flags/`,
  ]) {
    mgmt('paths', 'GET', path, 'odd path');
  }
  const longQuery = Array.from({ length: 1000 }, (_, i) => `p${i}=${i}`).join('&');
  capture('paths', '8 KB path', () => evProps('{}'), `/i/v0/e/${'a'.repeat(8000)}`);
  capture('paths', '1000 query parameters', () => evProps('{}'), `/i/v0/e/?${longQuery}`);
  decide('paths', '1000 query parameters', () => dec('"distinct_id":"d"'), `/decide/?v=4&${longQuery}`);
  decide(
    'paths',
    '1000 v parameters',
    () => dec('"distinct_id":"d"'),
    `/decide/?${new Array(1000).fill('v=4').join('&')}`,
  );
  mgmt('paths', 'GET', `/api/users/${'a'.repeat(8000)}/`, '8 KB path segment');
  mgmt('paths', 'GET', `/api/users/?${longQuery}`, '1000 query parameters');
  mgmt('paths', 'GET', `/api/users/?${new Array(1000).fill('limit=1').join('&')}`, '1000 limit parameters');
  mgmt(
    'paths',
    'GET',
    `/api/projects/${ctx.projectId}/events/?${new Array(500).fill('event=a').join('&')}`,
    '500 event filters',
  );
  const random = randomPaths(40, 0x5e77);
  random.forEach((path, i) => {
    const method = ['GET', 'POST', 'PATCH', 'DELETE'][i % 4]!;
    const body = method === 'GET' || method === 'DELETE' ? undefined : () => '{"a":1}';
    add({
      cls: 'paths',
      service: 'capture',
      name: `paths capture ${method} random #${i} ${path.slice(0, 100)}`,
      method,
      path,
      headers: JSON_HEADERS,
      body,
    });
    add({
      cls: 'paths',
      service: 'decide',
      name: `paths decide ${method} random #${i} ${path.slice(0, 100)}`,
      method,
      path,
      headers: JSON_HEADERS,
      body,
    });
    add({
      cls: 'paths',
      service: 'management',
      name: `paths management ${method} random #${i} ${path.slice(0, 100)}`,
      method,
      path,
      headers: { ...JSON_HEADERS, ...auth },
      body,
    });
  });

  // ---- flags: catastrophic regexes -----------------------------------------------------------
  const regexes = [
    '^(a+)+$',
    '(a|a)*$',
    '(.*a){25}',
    '^(([a-z])+.)+[A-Z]([a-z])+$',
    '(?<=a)b',
    '(',
    '[',
    'a{99999999}',
    '\\u0000',
    'x'.repeat(100_000),
  ];
  regexes.forEach((re, i) => {
    for (const operator of ['regex', 'not_regex']) {
      add({
        cls: 'flags',
        service: 'management',
        phase: 0,
        name: `flags management POST ${flagsBase} ${operator} ${JSON.stringify(re.length > 40 ? re.slice(0, 20) + '…' : re)}`,
        method: 'POST',
        path: flagsBase,
        headers: { ...JSON_HEADERS, ...auth },
        body: () => flagBody(propFilter(JSON.stringify(re), operator), `redos-${operator}-${i}`),
      });
    }
  });
  const evil = (n: number) => 'a'.repeat(n) + '!';
  for (const n of [30, 64, 1000, 100_000]) {
    for (const path of ['/decide/?v=4', '/flags/?v=2', '/decide/?v=3']) {
      decide(
        'flags',
        `email of ${n} a's and "!"`,
        () => dec(`"distinct_id":"d","person_properties":{"email":"${evil(n)}"}`),
        path,
      );
    }
  }
  decide('flags', 'email of 64 a\'s and "!" as a group property and distinct id', () =>
    dec(
      `"distinct_id":"${evil(64)}","groups":{"company":"${evil(64)}"},"group_properties":{"company":{"email":"${evil(64)}"}}`,
    ),
  );
  capture('flags', '$set email of 64 a\'s and "!" (stored person property)', () =>
    ev(`"event":"$identify","distinct_id":"redos-person","properties":{"$set":{"email":"${evil(64)}"}}`),
  );
  decide('flags', 'distinct id whose stored email is 64 a\'s and "!"', () =>
    dec('"distinct_id":"redos-person"'),
  );

  // Names identify cases in reports: make any accidental repeat unique.
  const seen = new Map<string, number>();
  for (const c of cases) {
    const n = seen.get(c.name) ?? 0;
    seen.set(c.name, n + 1);
    if (n > 0) c.name = `${c.name} (#${n + 1})`;
  }
  return cases;
}
