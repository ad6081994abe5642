// Hostile cases for management's account and data endpoints: organizations (list, create, read,
// PATCH, DELETE, `@current`), members, project create/PATCH/DELETE/reset_token and
// data_retention_days, persons (read, DELETE ?delete_events, bulk_delete, deletion jobs). Same
// rules as the main corpus (corpus.ts): every answer below 500, with JSON, in time.
//
// Legitimate writes only ever touch the scratch objects of AccountsContext: reset_token and
// data_retention_days go to `scratchProjectId`, DELETE to `doomedProjectId`, member changes to
// `memberUuid`. No case can delete or re-key the main project (whose token the suite's last
// test still captures with) or take its owner out of the organization: `@current` and anything
// that decodes to it are never sent with DELETE or reset_token, since the user's current project
// moves whenever a case creates an organization. Duplicate and conflicting requests (class
// `races`) are listed next to each other, so the pool sends them at the same time.
import { DEEP_SHAPES, INVALID_UTF8, UNSTORABLE_ESCAPES, withBytes } from './generators';
import type { CaseClass, HostileCase } from './corpus';

export interface AccountsContext {
  /** A personal API key with every scope, of the owner of `organizationId`. */
  personalKey: string;
  /** The main project (in `organizationId`): only reads and rejected writes. */
  projectId: number;
  organizationId: string;
  /** A second project of the organization: legitimate PATCH and reset_token go here. */
  scratchProjectId: number;
  /** A third project of the organization: legitimately deleted (more than once at a time). */
  doomedProjectId: number;
  /** An organization and project of another user, which the key's user is not a member of. */
  otherOrganizationId: string;
  otherProjectId: number;
  /** A user outside the organization, added to it in phase 0 (member cases act on them). */
  memberUuid: string;
  memberEmail: string;
  /** A user outside the organization that several concurrent requests add at once. */
  racerEmail: string;
  /** A person of the main project. */
  personUuid: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const MB = 1024 * 1024;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Values of the wrong type (or at a type's edge) for any field. */
const WRONG_VALUES = [
  '1',
  'true',
  'null',
  '{}',
  '[]',
  '["a"]',
  '{"a":1}',
  '1e400',
  '-0',
  '2147483648',
  '9223372036854775808',
  '-9223372036854775809',
  '""',
  '"NaN"',
];

/** Path ids that name nothing (or something not the caller's), percent-encoded as sent. */
const BAD_IDS = [
  'abc',
  '0',
  '-1',
  '1.5',
  '1e3',
  '0x10',
  '2147483648',
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551616',
  '99999999999999999999999999',
  'NaN',
  'null',
  'undefined',
  'true',
  '__proto__',
  'constructor',
  '%20',
  '+1',
  '@current@current',
  '@CURRENT',
  'current',
  '@me',
  '@',
  '%40',
  '..',
  '%2e%2e',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '..%5C..%5Cwindows',
  '%2Fetc%2Fpasswd',
  'a%2Fb',
  NIL_UUID,
  `{${NIL_UUID}}`,
  NIL_UUID.replace(/-/g, ''),
  `urn:uuid:${NIL_UUID}`,
  `${NIL_UUID}x`,
  `${NIL_UUID}%00`,
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'x'.repeat(300),
  `'%20OR%201=1--`,
  '%25',
];

/** Levels that are not 1, 8 or 15 as JSON integers. */
const BAD_LEVELS = [
  '0',
  '16',
  '"8"',
  'null',
  '-1',
  '2',
  '7',
  '8.5',
  '15.000001',
  '1e400',
  '2147483648',
  '9223372036854775808',
  'true',
  '[8]',
  '{"level":8}',
  '"owner"',
  '"admin"',
  'NaN',
  '""',
];

/** Strings that are not e-mail addresses (as JSON literals). */
const NOT_EMAILS = [
  '""',
  '" "',
  '"a"',
  '"a@"',
  '"@b.c"',
  '"a@b"',
  '"a@@b.c"',
  '"a b@c.d"',
  '"<script>@x.y"',
  '"a@b.c\\n"',
  '"a@b.c\\r\\nBcc: x@y.z"',
  '"a@-b.c"',
  '"a@b..c"',
  '".a@b.c"',
  '"a@[127.0.0.1]"',
  '"mailto:a@b.c"',
  '"a@b.c, d@e.f"',
  '"%"',
  '"ü@ü.ü"',
  JSON.stringify(`${'a'.repeat(250)}@b.cd`),
  JSON.stringify(`a@${'b'.repeat(1000)}.cd`),
  JSON.stringify(`${'a'.repeat(MB)}@b.cd`),
  JSON.stringify(`${'a.'.repeat(5000)}a@b.cd`),
  '"nobody-here@sett.test"',
  '1',
  'null',
  '["a@b.cd"]',
  '{"email":"a@b.cd"}',
  'true',
];

export function buildAccountsCorpus(ctx: AccountsContext): HostileCase[] {
  const cases: HostileCase[] = [];
  const auth = { authorization: `Bearer ${ctx.personalKey}` };
  const orgs = '/api/organizations/';
  const org = `${orgs}${ctx.organizationId}/`;
  const members = `${org}members/`;
  const member = `${members}${ctx.memberUuid}/`;
  const project = `/api/projects/${ctx.projectId}/`;
  const scratch = `/api/projects/${ctx.scratchProjectId}/`;
  const persons = `${project}persons/`;
  const bulk = `${persons}bulk_delete/`;
  const deletions = `${persons}deletions/`;
  const add = (
    cls: CaseClass,
    method: string,
    path: string,
    name: string,
    body?: () => string | Buffer,
    phase: 0 | 1 = 1,
  ) =>
    cases.push({
      cls,
      service: 'management',
      name: `${cls} management ${method} ${path.length > 120 ? path.slice(0, 120) + '…' : path} ${name}`.trim(),
      method,
      path,
      headers: body ? { ...JSON_HEADERS, ...auth } : auth,
      body,
      phase,
    });

  // ---- phase 0: the member the member cases act on ---------------------------------------------
  add(
    'types',
    'POST',
    members,
    'add the scratch member',
    () => `{"email":${JSON.stringify(ctx.memberEmail)}}`,
    0,
  );

  // ---- depth -----------------------------------------------------------------------------------
  for (const depth of [100, 3000, 100_000]) {
    for (const { shape, build } of DEEP_SHAPES) {
      const d = () => build(depth);
      const tag = `${shape} ${depth} deep`;
      add('depth', 'POST', orgs, `name ${tag}`, () => `{"name":${d()}}`);
      add('depth', 'POST', orgs, `whole body ${tag}`, d);
      add('depth', 'PATCH', org, `name ${tag}`, () => `{"name":${d()}}`);
      add('depth', 'POST', members, `email ${tag}`, () => `{"email":${d()},"level":1}`);
      add('depth', 'PATCH', member, `level ${tag}`, () => `{"level":${d()}}`);
      add(
        'depth',
        'POST',
        '/api/projects/',
        `organization ${tag}`,
        () => `{"name":"p","organization":${d()}}`,
      );
      add('depth', 'PATCH', scratch, `data_retention_days ${tag}`, () => `{"data_retention_days":${d()}}`);
      add('depth', 'POST', bulk, `ids ${tag}`, () => `{"ids":${d()}}`);
      add('depth', 'POST', bulk, `distinct_ids item ${tag}`, () => `{"distinct_ids":[${d()}]}`);
      add('depth', 'POST', bulk, `whole body ${tag}`, d);
    }
  }

  // ---- encoding --------------------------------------------------------------------------------
  for (const { label, escaped } of UNSTORABLE_ESCAPES) {
    const s = `"${escaped}"`;
    add('encoding', 'POST', orgs, `name ${label}`, () => `{"name":${s}}`);
    add('encoding', 'POST', orgs, `key ${label}`, () => `{"name":"n",${s}:1}`);
    add('encoding', 'PATCH', org, `name ${label}`, () => `{"name":${s}}`);
    add('encoding', 'POST', members, `email ${label}`, () => `{"email":"a${escaped}@example.com"}`);
    add('encoding', 'POST', members, `email is ${label}`, () => `{"email":${s}}`);
    add('encoding', 'POST', '/api/projects/', `name ${label}`, () => `{"name":${s}}`);
    add('encoding', 'POST', '/api/projects/', `timezone ${label}`, () => `{"name":"n","timezone":${s}}`);
    add('encoding', 'PATCH', scratch, `name ${label}`, () => `{"name":${s}}`);
    add('encoding', 'POST', bulk, `distinct_ids ${label}`, () => `{"distinct_ids":[${s}]}`);
    add('encoding', 'POST', bulk, `ids ${label}`, () => `{"ids":[${s}]}`);
  }
  for (const { label, bytes } of INVALID_UTF8) {
    const body = (template: string) => () => withBytes(template, bytes);
    add('encoding', 'POST', orgs, `invalid UTF-8 ${label} in name`, body('{"name":"{{BAD}}"}'));
    add('encoding', 'POST', members, `invalid UTF-8 ${label} in email`, body('{"email":"a{{BAD}}@b.cd"}'));
    add('encoding', 'PATCH', scratch, `invalid UTF-8 ${label} in name`, body('{"name":"{{BAD}}"}'));
    add(
      'encoding',
      'POST',
      bulk,
      `invalid UTF-8 ${label} in distinct_ids`,
      body('{"distinct_ids":["{{BAD}}"]}'),
    );
  }
  for (const seg of ['a%00b', '%00', '%ED%A0%80', '%E0%A4%A', '%', '%zz', '%C0%AF', '%FF%FE', '%uD800']) {
    add('encoding', 'GET', `${orgs}${seg}/`, 'path segment');
    add('encoding', 'GET', `${orgs}${seg}/members/`, 'path segment');
    add('encoding', 'GET', `${members}${seg}/`, 'path segment');
    add('encoding', 'GET', `${persons}${seg}/`, 'path segment');
    add('encoding', 'DELETE', `${persons}${seg}/`, 'path segment');
    add('encoding', 'GET', `${deletions}${seg}/`, 'path segment');
    add('encoding', 'DELETE', `/api/projects/${seg}/`, 'path segment');
    add('encoding', 'PATCH', `/api/projects/${seg}/reset_token/`, 'path segment');
    add('encoding', 'DELETE', `${persons}${ctx.personUuid}/?delete_events=${seg}`, 'query');
  }

  // ---- size ------------------------------------------------------------------------------------
  add('size', 'POST', orgs, '1 MB name', () => `{"name":"${'a'.repeat(MB)}"}`);
  add('size', 'POST', orgs, '65-character name', () => `{"name":"${'a'.repeat(65)}"}`);
  add('size', 'PATCH', org, '100 KB name', () => `{"name":"${'a'.repeat(100 * 1024)}"}`);
  add('size', 'POST', '/api/projects/', '201-character name', () => `{"name":"${'a'.repeat(201)}"}`);
  add('size', 'POST', '/api/projects/', '1 MB timezone', () => `{"name":"n","timezone":"${'a'.repeat(MB)}"}`);
  add('size', 'PATCH', scratch, '2 MB body', () => `{"name":"${'a'.repeat(2 * MB)}"}`);
  const uuids = (n: number) =>
    Array.from({ length: n }, (_, i) => `"00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}"`);
  const dids = (n: number) => Array.from({ length: n }, (_, i) => `"hostile-nobody-${i}"`);
  add('size', 'POST', bulk, '1000 ids (the limit)', () => `{"ids":[${uuids(1000).join(',')}]}`);
  add('size', 'POST', bulk, '1001 ids', () => `{"ids":[${uuids(1001).join(',')}]}`);
  add('size', 'POST', bulk, '20k ids', () => `{"ids":[${uuids(20_000).join(',')}]}`);
  add('size', 'POST', bulk, '1001 distinct_ids', () => `{"distinct_ids":[${dids(1001).join(',')}]}`);
  add('size', 'POST', bulk, '40k distinct_ids', () => `{"distinct_ids":[${dids(40_000).join(',')}]}`);
  add(
    'size',
    'POST',
    bulk,
    '1000 copies of one id',
    () => `{"ids":[${new Array(1000).fill(`"${NIL_UUID}"`).join(',')}]}`,
  );
  add('size', 'POST', bulk, '1000 distinct_ids of 400 characters', () =>
    JSON.stringify({ distinct_ids: Array.from({ length: 1000 }, (_, i) => `${i}-`.padEnd(400, 'x')) }),
  );
  add('size', 'POST', bulk, 'distinct_id of 401 characters', () =>
    JSON.stringify({ distinct_ids: ['d'.repeat(401)] }),
  );
  add('size', 'POST', bulk, 'distinct_id of 900 KB', () =>
    JSON.stringify({ distinct_ids: ['d'.repeat(900 * 1024)] }),
  );
  add(
    'size',
    'POST',
    bulk,
    '1000 ids and 1000 distinct_ids',
    () => `{"ids":[${uuids(1000).join(',')}],"distinct_ids":[${dids(1000).join(',')}]}`,
  );
  add('size', 'POST', bulk, '3 MB body', () => `{"distinct_ids":["${'d'.repeat(3 * MB)}"]}`);

  // ---- types -----------------------------------------------------------------------------------
  for (const v of WRONG_VALUES) {
    add('types', 'POST', orgs, `name=${v}`, () => `{"name":${v}}`);
    add('types', 'PATCH', org, `name=${v}`, () => `{"name":${v}}`);
    add(
      'types',
      'PATCH',
      org,
      `is_member_join_email_enabled=${v}`,
      () => `{"is_member_join_email_enabled":${v}}`,
    );
    add(
      'types',
      'PATCH',
      org,
      `enforce_2fa=${v}`,
      () => `{"enforce_2fa":${v},"is_ai_data_processing_approved":${v}}`,
    );
    add('types', 'POST', members, `email=${v}`, () => `{"email":${v}}`);
    add('types', 'POST', '/api/projects/', `name=${v}`, () => `{"name":${v}}`);
    add('types', 'POST', '/api/projects/', `organization=${v}`, () => `{"name":"n","organization":${v}}`);
    add('types', 'POST', '/api/projects/', `timezone=${v}`, () => `{"name":"n","timezone":${v}}`);
    add('types', 'PATCH', scratch, `data_retention_days=${v}`, () => `{"data_retention_days":${v}}`);
    add('types', 'PATCH', scratch, `name=${v}`, () => `{"name":${v}}`);
    add('types', 'POST', bulk, `ids=${v}`, () => `{"ids":${v}}`);
    add('types', 'POST', bulk, `ids item=${v}`, () => `{"ids":[${v}]}`);
    add('types', 'POST', bulk, `distinct_ids=${v}`, () => `{"distinct_ids":${v}}`);
    add('types', 'POST', bulk, `distinct_ids item=${v}`, () => `{"distinct_ids":[${v}]}`);
    add(
      'types',
      'POST',
      bulk,
      `delete_events=${v}`,
      () => `{"distinct_ids":["hostile-nobody"],"delete_events":${v}}`,
    );
  }
  for (const body of ['null', '[]', '1', '"s"', 'true', '[null]', '', '{', '{"a":1,}', '{}']) {
    const name = `whole body ${JSON.stringify(body)}`;
    add('types', 'POST', orgs, name, () => body);
    add('types', 'PATCH', org, name, () => body);
    add('types', 'POST', members, name, () => body);
    add('types', 'PATCH', member, name, () => body);
    add('types', 'POST', '/api/projects/', name, () => body);
    add('types', 'PATCH', scratch, name, () => body);
    add('types', 'POST', bulk, name, () => body);
  }
  // Levels: only 1, 8 and 15 as integers (8 and 1 are legitimate: the scratch member).
  for (const level of BAD_LEVELS) {
    add(
      'types',
      'POST',
      members,
      `level=${level}`,
      () => `{"email":${JSON.stringify(ctx.memberEmail)},"level":${level}}`,
    );
    add(
      'types',
      'POST',
      members,
      `level=${level} for an unknown email`,
      () => `{"email":"nobody-here@sett.test","level":${level}}`,
    );
    add('types', 'PATCH', member, `level=${level}`, () => `{"level":${level}}`);
    add('types', 'PATCH', `${members}@me/`, `level=${level}`, () => `{"level":${level}}`);
  }
  // Never 15: an owner member could let the key's user leave (DELETE members/@me/).
  for (const level of ['8', '1', '1.0'])
    add('types', 'PATCH', member, `level=${level}`, () => `{"level":${level}}`);
  add('types', 'PATCH', `${members}@me/`, 'own level 8', () => '{"level":8}');
  add('types', 'PATCH', member, 'no level', () => '{}');
  // E-mails that are not e-mails (or name nobody).
  for (const email of NOT_EMAILS) {
    const label = email.length > 60 ? `${email.slice(0, 30)}… (${email.length} characters)` : email;
    add('types', 'POST', members, `email=${label}`, () => `{"email":${email}}`);
    add('types', 'POST', members, `email=${label} level 8`, () => `{"email":${email},"level":8}`);
  }
  add(
    'types',
    'POST',
    members,
    'the member again, upper case',
    () => `{"email":${JSON.stringify(ctx.memberEmail.toUpperCase())}}`,
  );
  add(
    'types',
    'POST',
    members,
    'the member with spaces around',
    () => `{"email":${JSON.stringify(` ${ctx.memberEmail} `)}}`,
  );
  // Unknown and sensitive fields.
  add('types', 'POST', orgs, 'unknown field slug', () => '{"name":"n","slug":"taken"}');
  add(
    'types',
    'POST',
    orgs,
    'unknown field id',
    () => `{"name":"n","id":${JSON.stringify(ctx.otherOrganizationId)}}`,
  );
  add('types', 'POST', orgs, '__proto__ field', () => '{"name":"n","__proto__":{"is_staff":true}}');
  add(
    'types',
    'PATCH',
    org,
    'constructor.prototype field',
    () => '{"constructor":{"prototype":{"level":15}}}',
  );
  add('types', 'PATCH', org, 'membership_level field', () => '{"membership_level":15}');
  add('types', 'PATCH', org, 'teams field', () => `{"teams":[{"id":${ctx.otherProjectId}}]}`);
  add('types', 'POST', members, 'user_id field', () => `{"email":"nobody-here@sett.test","user_id":1}`);
  add(
    'types',
    'POST',
    members,
    'organization field',
    () =>
      `{"email":${JSON.stringify(ctx.memberEmail)},"organization":${JSON.stringify(ctx.otherOrganizationId)}}`,
  );
  add('types', 'PATCH', member, 'user field', () => '{"level":1,"user":{"is_staff":true}}');
  add('types', 'PATCH', member, '__proto__ field', () => '{"level":1,"__proto__":{"level":15}}');
  add('types', 'POST', '/api/projects/', 'api_token field', () => '{"name":"n","api_token":"phc_mine"}');
  add('types', 'POST', '/api/projects/', 'id field', () => `{"name":"n","id":${ctx.otherProjectId}}`);
  add(
    'types',
    'POST',
    '/api/projects/',
    'organization_id field',
    () => `{"name":"n","organization_id":${JSON.stringify(ctx.otherOrganizationId)}}`,
  );
  add('types', 'PATCH', scratch, 'api_token field', () => '{"api_token":"phc_mine"}');
  add(
    'types',
    'PATCH',
    scratch,
    'organization field',
    () => `{"organization":${JSON.stringify(ctx.otherOrganizationId)}}`,
  );
  add('types', 'PATCH', scratch, 'deleted_at field', () => '{"deleted_at":null}');
  add('types', 'POST', bulk, 'unknown field filter', () => '{"distinct_ids":["hostile-nobody"],"filter":{}}');
  add('types', 'POST', bulk, 'neither ids nor distinct_ids', () => '{"delete_events":true}');
  add('types', 'POST', bulk, 'empty ids', () => '{"ids":[]}');
  add('types', 'POST', bulk, 'empty distinct_ids', () => '{"distinct_ids":[]}');
  add('types', 'POST', bulk, 'empty distinct id', () => '{"distinct_ids":[""]}');
  add('types', 'POST', bulk, 'ids=null and distinct_ids=null', () => '{"ids":null,"distinct_ids":null}');
  add(
    'types',
    'POST',
    bulk,
    'team_id field',
    () => `{"distinct_ids":["hostile-nobody"],"team_id":${ctx.otherProjectId}}`,
  );
  // Ids that pass the uuid format but not Postgres' uuid type (and the reverse).
  for (const id of [
    `urn:uuid:${NIL_UUID}`,
    `URN:UUID:${NIL_UUID}`,
    `{${NIL_UUID}}`,
    NIL_UUID.replace(/-/g, ''),
    NIL_UUID.toUpperCase().replace(/0/g, 'F'),
    `${NIL_UUID} `,
    ` ${NIL_UUID}`,
    'g0000000-0000-0000-0000-000000000000',
  ]) {
    add('types', 'POST', bulk, `ids=[${JSON.stringify(id)}]`, () => JSON.stringify({ ids: [id] }));
    add('types', 'POST', '/api/projects/', `organization=${JSON.stringify(id)}`, () =>
      JSON.stringify({ name: 'n', organization: id }),
    );
    add('types', 'POST', members, `email of a uuid ${JSON.stringify(id)}`, () =>
      JSON.stringify({ email: `${id}@b.cd` }),
    );
  }
  add('types', 'POST', '/api/projects/', "another organization's uuid", () =>
    JSON.stringify({ name: 'n', organization: ctx.otherOrganizationId }),
  );
  add('types', 'POST', '/api/projects/', `the organization by urn:uuid`, () =>
    JSON.stringify({ name: 'n', organization: `urn:uuid:${ctx.organizationId}` }),
  );
  add('types', 'PATCH', '/api/users/@me/', 'set_current_organization by urn:uuid', () =>
    JSON.stringify({ set_current_organization: `urn:uuid:${ctx.organizationId}` }),
  );
  add('types', 'POST', bulk, `the person by urn:uuid`, () =>
    JSON.stringify({ ids: [`urn:uuid:${ctx.personUuid}`] }),
  );
  for (const tz of ['Not/AZone', '../../etc/passwd', 'utc', 'Europe/Paris ', 'GMT+1', 'Etc/GMT+99', '%']) {
    add('types', 'POST', '/api/projects/', `timezone=${JSON.stringify(tz)}`, () =>
      JSON.stringify({ name: 'n', timezone: tz }),
    );
    add('types', 'PATCH', scratch, `timezone=${JSON.stringify(tz)}`, () => JSON.stringify({ timezone: tz }));
  }
  for (const days of [
    '0',
    '-1',
    '36501',
    '1.5',
    '"30"',
    '1e400',
    '2147483648',
    '9223372036854775808',
    'true',
    '[30]',
    '{}',
    '"null"',
    'null',
    '30',
    '36500',
    '1',
  ]) {
    add('types', 'PATCH', scratch, `data_retention_days=${days}`, () => `{"data_retention_days":${days}}`);
  }
  add(
    'types',
    'PATCH',
    project,
    'data_retention_days on the main project, wrong type',
    () => '{"data_retention_days":"1"}',
  );
  add(
    'types',
    'PATCH',
    project,
    'data_retention_days on the main project, 0',
    () => '{"data_retention_days":0}',
  );
  add(
    'types',
    'PATCH',
    `/api/projects/${ctx.otherProjectId}/`,
    "another organization's project",
    () => '{"data_retention_days":1}',
  );
  // ?delete_events= on DELETE and bulk_delete.
  for (const q of [
    'yes',
    '',
    'TRUE',
    '2',
    '-1',
    'true&delete_events=false',
    'delete_events',
    '%20true',
    'true%00',
  ]) {
    const query = q === 'delete_events' ? 'delete_events[]=true' : `delete_events=${q}`;
    add('types', 'DELETE', `${persons}${NIL_UUID}/?${query}`, 'query');
    add('types', 'POST', `${bulk}?${query}`, 'query', () => '{"distinct_ids":["hostile-nobody"]}');
  }
  add('types', 'DELETE', `${persons}${NIL_UUID}/?delete_events[a]=1`, 'query');
  add(
    'types',
    'POST',
    `${bulk}?delete_events=false`,
    'query disagrees with the body',
    () => '{"distinct_ids":["hostile-nobody"],"delete_events":true}',
  );
  for (const q of [
    'limit=abc',
    'limit=-1',
    'limit=0',
    'offset=9999999999',
    'limit=1e3',
    'limit[]=1',
    'offset=%00',
  ]) {
    add('types', 'GET', `${orgs}?${q}`, 'query');
    add('types', 'GET', `${members}?${q}`, 'query');
    add('types', 'GET', `${deletions}?${q}`, 'query');
  }

  // ---- ids in paths ----------------------------------------------------------------------------
  const upperOrg = ctx.organizationId.toUpperCase();
  for (const id of [...BAD_IDS, ctx.otherOrganizationId]) {
    const o = `${orgs}${id}/`;
    add('paths', 'GET', o, 'organization id');
    add('paths', 'PATCH', o, 'organization id', () => '{"name":"renamed"}');
    add('paths', 'DELETE', o, 'organization id');
    add('paths', 'GET', `${o}members/`, 'organization id');
    add(
      'paths',
      'POST',
      `${o}members/`,
      'organization id',
      () => `{"email":${JSON.stringify(ctx.memberEmail)}}`,
    );
    add('paths', 'GET', `${o}members/@me/`, 'organization id');
    add('paths', 'DELETE', `${o}members/@me/`, 'organization id');
    const m = `${members}${id}/`;
    add('paths', 'GET', m, 'member id');
    add('paths', 'PATCH', m, 'member id', () => '{"level":1}');
    add('paths', 'DELETE', m, 'member id');
    add('paths', 'GET', `${persons}${id}/`, 'person id');
    add('paths', 'DELETE', `${persons}${id}/`, 'person id');
    add('paths', 'DELETE', `${persons}${id}/?delete_events=true`, 'person id');
    add('paths', 'GET', `${deletions}${id}/`, 'deletion id');
  }
  for (const id of [
    ...BAD_IDS,
    String(ctx.otherProjectId),
    `0${ctx.projectId}`,
    `${ctx.projectId}.0`,
    `+${ctx.projectId}`,
    `${ctx.projectId}%00`,
    `${ctx.projectId}%20`,
    `${ctx.projectId}abc`,
    `-${ctx.projectId}`,
  ]) {
    // Never `@current` itself (nor what decodes to it) with DELETE or reset_token: see the top.
    const p = `/api/projects/${id}/`;
    add('paths', 'GET', p, 'project id');
    add('paths', 'PATCH', p, 'project id', () => '{"data_retention_days":1}');
    add('paths', 'DELETE', p, 'project id');
    add('paths', 'PATCH', `${p}reset_token/`, 'project id');
    add('paths', 'POST', `${p}reset_token/`, 'project id');
    add('paths', 'GET', `${p}persons/${ctx.personUuid}/`, 'project id');
    add('paths', 'DELETE', `${p}persons/${ctx.personUuid}/`, 'project id');
    add(
      'paths',
      'POST',
      `${p}persons/bulk_delete/`,
      'project id',
      () => '{"distinct_ids":["hostile-nobody"]}',
    );
    add('paths', 'GET', `${p}persons/deletions/`, 'project id');
  }
  for (const path of [
    `${orgs}@current/`,
    `${orgs}%40current/`,
    `${orgs}@current/members/`,
    `${orgs}@current/members/@me/`,
    `${orgs}@current/members/@current/`,
    `${orgs}${upperOrg}/`,
    `${orgs}${upperOrg}/members/${ctx.memberUuid.toUpperCase()}/`,
    `${orgs}@me/`,
    `${orgs}@current/@current/`,
    `${orgs}@current/members/@me/@me/`,
    `${persons}@current/`,
    `${deletions}@current/`,
    `${deletions}999999999999999999/`,
    `/api/projects/@current/persons/deletions/`,
    `/api/projects/@current/@current/`,
    `/api/projects/@current@current/`,
    `${persons}${ctx.personUuid.toUpperCase()}/`,
    `${persons}deletions`,
    `${persons}bulk_delete/`,
    `${orgs}${ctx.organizationId}`,
    `${orgs}${ctx.organizationId}//members/`,
    `${orgs}${ctx.organizationId}/members/@me`,
    `${orgs}/../${ctx.organizationId}/`,
    `${orgs}${ctx.organizationId}/../../users/@me/`,
    `${orgs}${ctx.organizationId}/members/..%2F..%2F/`,
  ]) {
    add('paths', 'GET', path, 'odd path');
  }
  for (const method of ['PUT', 'TRACE', 'POST']) {
    add('paths', method, org, `wrong method ${method}`, () => '{"name":"n"}');
    add('paths', method, member, `wrong method ${method}`, () => '{"level":1}');
    add('paths', method, `${persons}${ctx.personUuid}/`, `wrong method ${method}`, () => '{}');
  }
  add('paths', 'GET', `${bulk}`, 'wrong method GET');
  add('paths', 'DELETE', `${bulk}`, 'wrong method DELETE');
  add('paths', 'DELETE', `${deletions}1/`, 'wrong method DELETE');
  add('paths', 'PUT', `${scratch}reset_token/`, 'wrong method PUT');
  add('paths', 'GET', `${scratch}reset_token/`, 'wrong method GET');
  add('paths', 'DELETE', orgs, 'wrong method DELETE');
  add('paths', 'PATCH', orgs, 'wrong method PATCH', () => '{"name":"n"}');

  // ---- duplicate and conflicting requests (sent together) ---------------------------------------
  for (let i = 0; i < 4; i++)
    add(
      'races',
      'POST',
      members,
      `add the same user at once #${i}`,
      () =>
        `{"email":${JSON.stringify(i % 2 ? ctx.racerEmail.toUpperCase() : ctx.racerEmail)},"level":${i % 2 ? 8 : 1}}`,
    );
  for (let i = 0; i < 3; i++)
    add('races', 'DELETE', `/api/projects/${ctx.doomedProjectId}/`, `delete at once #${i}`);
  add(
    'races',
    'PATCH',
    `/api/projects/${ctx.doomedProjectId}/reset_token/`,
    'reset_token of a project being deleted',
  );
  add(
    'races',
    'PATCH',
    `/api/projects/${ctx.doomedProjectId}/`,
    'PATCH a project being deleted',
    () => '{"data_retention_days":7}',
  );
  add(
    'races',
    'POST',
    `/api/projects/${ctx.doomedProjectId}/persons/bulk_delete/`,
    'bulk_delete in a project being deleted',
    () => '{"distinct_ids":["hostile-nobody"]}',
  );
  for (let i = 0; i < 3; i++) add('races', 'PATCH', `${scratch}reset_token/`, `reset_token at once #${i}`);
  add('races', 'POST', `${scratch}reset_token/`, 'reset_token by POST at the same time');
  for (const days of ['1', 'null', '30', '36500'])
    add(
      'races',
      'PATCH',
      scratch,
      `data_retention_days=${days} at once`,
      () => `{"data_retention_days":${days}}`,
    );
  add('races', 'PATCH', member, 'level 8 at once', () => '{"level":8}');
  add('races', 'PATCH', member, 'level 1 at once', () => '{"level":1}');
  add('races', 'DELETE', member, 'remove while its level changes');
  add(
    'races',
    'POST',
    members,
    'add again while removed',
    () => `{"email":${JSON.stringify(ctx.memberEmail)}}`,
  );
  add('races', 'DELETE', member, 'remove again');
  add('races', 'DELETE', `${members}@me/`, 'the last owner leaves');
  add('races', 'DELETE', `${orgs}${ctx.organizationId}/`, 'delete the organization (it has projects)');
  for (let i = 0; i < 3; i++)
    add(
      'races',
      'POST',
      orgs,
      `create the same organization at once #${i}`,
      () => '{"name":"hostile twins"}',
    );
  add('races', 'DELETE', `${persons}${ctx.personUuid}/`, 'delete one person at once #0');
  add('races', 'DELETE', `${persons}${ctx.personUuid}/?delete_events=false`, 'delete one person at once #1');
  add('races', 'POST', bulk, 'bulk_delete the same person at once', () =>
    JSON.stringify({ ids: [ctx.personUuid, ctx.personUuid] }),
  );
  add('races', 'GET', `${persons}${ctx.personUuid}/`, 'read a person being deleted');

  // Names identify cases in reports: make any accidental repeat unique.
  const seen = new Map<string, number>();
  for (const c of cases) {
    const n = seen.get(c.name) ?? 0;
    seen.set(c.name, n + 1);
    if (n > 0) c.name = `${c.name} (#${n + 1})`;
  }
  return cases;
}
