// The OpenAPI document is generated from the route tables: it is valid OpenAPI 3.1 (checked by
// an independent validator), every declared route of every table is in it with its scope, and
// request bodies are the very schemas the routes are validated with.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openApiPath } from '@sett/http';
import { cohortCreateSchema, cohortUpdateSchema } from '../src/cohorts/cohort-schemas';
import { featureFlagCreateSchema } from '../src/feature-flags/feature-flag-schemas';
import { API_TABLES, buildApiDocument } from '../src/openapi/api-document';
import { managementRoutes } from '../src/routes';
import { userUpdateSchema } from '../src/users/user-schemas';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const doc = buildApiDocument('https://sett.example.com') as Json;
const op = (path: string, method: string): Json => doc.paths[path][method];

test('is valid OpenAPI 3.1', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'sett-openapi-')), 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  // The validator is an ES module: run its CLI in its own node process.
  const cli = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
  const { stdout } = await promisify(execFile)(process.execPath, [cli, file]).catch(
    (err: { stdout: string }) => {
      throw new Error(`invalid OpenAPI document: ${err.stdout}`);
    },
  );
  expect(JSON.parse(stdout)).toMatchObject({ valid: true });
  expect(doc.openapi).toBe('3.1.0');
  expect(doc.servers).toEqual([{ url: 'https://sett.example.com' }]);
});

test('documents every route of every table, with its credential and scope', () => {
  let count = 0;
  for (const table of API_TABLES) {
    for (const r of table.routes) {
      for (const url of [r.url, ...(r.aliases ?? [])]) {
        const o = doc.paths[openApiPath(url)]?.[r.method.toLowerCase()];
        expect([r.method, url, o?.summary]).toEqual([r.method, url, r.summary]);
        // Any valid key (scope null): the credential with no scope listed.
        if (r.auth.kind === 'personal_key')
          expect(o.security).toEqual([{ PersonalApiKey: r.auth.scope === null ? [] : [r.auth.scope] }]);
        count++;
      }
    }
  }
  // Management's and capture's tables (decide's joins when it declares one).
  expect(count).toBeGreaterThan(managementRoutes.routes.length);
  expect(Object.keys(doc.paths)).toContain('/i/v0/e/');
});

test('request bodies are the very schemas that validate them', () => {
  expect(op('/api/users/{uuid}/', 'patch').requestBody.content['application/json'].schema).toBe(
    userUpdateSchema,
  );
  expect(
    op('/api/projects/{project_id}/feature_flags/', 'post').requestBody.content['application/json'].schema,
  ).toBe(featureFlagCreateSchema);
  const post = op('/api/projects/{project_id}/cohorts/', 'post');
  expect(post.security).toEqual([{ PersonalApiKey: ['cohort:write'] }]);
  expect(post.requestBody.content['application/json'].schema).toBe(cohortCreateSchema);
  expect(Object.keys(post.requestBody.content)).toEqual(['application/json', 'multipart/form-data']);
  expect(
    op('/api/projects/{project_id}/cohorts/{id}/', 'patch').requestBody.content['application/json'].schema,
  ).toBe(cohortUpdateSchema);
});

test('documents the list filters, the secret key of remote_config and the public schema route', () => {
  const persons = op('/api/projects/{project_id}/persons/', 'get').parameters.map((p: Json) => p.name);
  expect(persons).toEqual(
    expect.arrayContaining(['search', 'email', 'distinct_id', 'properties', 'limit', 'offset']),
  );
  const flags = op('/api/projects/{project_id}/feature_flags/', 'get').parameters.map((p: Json) => p.name);
  expect(flags).toEqual(expect.arrayContaining(['search', 'active', 'type']));
  expect(op('/api/projects/{project_id}/feature_flags/{id}/remote_config', 'get').security).toEqual([
    { PersonalApiKey: ['feature_flag:read'] },
    { ProjectSecretKey: [] },
  ]);
  expect(op('/api/schema/', 'get').security).toEqual([]);
  expect(op('/api/users/{uuid}/', 'delete').responses['204']).toBeDefined();
});
