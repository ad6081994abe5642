// pnpm start's key hand-over: in full on a terminal only; otherwise masked in the output and in
// full in a file only its owner can read, including when that file existed with a wider mode.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { existingStackLines, presentCredentials } from '../src/credentials-output';

const creds = {
  project_id: 7,
  project_api_key: 'phc_publicprojecttokenAAAAAAAAAAAAAAAAAAAA',
  personal_api_key: 'phx_secretpersonalkeyBBBBBBBBBBBBBBBBBBBBBBBBBBBB',
  user_uuid: '0190a0b0-0000-7000-8000-000000000001',
};

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-credentials-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it('shows the personal key in full on a terminal and writes no file', () => {
  const file = path.join(dir, 'credentials.json');
  const text = presentCredentials(creds, { interactive: true, file }).join('\n');
  expect(text).toContain(creds.personal_api_key);
  expect(text).toContain(creds.project_api_key);
  expect(fs.existsSync(file)).toBe(false);
});

it('otherwise masks it, names the file, and writes it 0600 in a 0700 directory', () => {
  const file = path.join(dir, 'nested', 'credentials.json');
  const text = presentCredentials(creds, {
    interactive: false,
    file,
    now: () => new Date('2026-01-02T03:04:05Z'),
  }).join('\n');
  expect(text).not.toContain(creds.personal_api_key);
  expect(text).not.toContain(creds.personal_api_key.slice(4, 30));
  expect(text).toContain('phx_...BBBB');
  expect(text).toContain(file);
  expect(text).toContain(creds.project_api_key); // public by design
  expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
  expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({
    ...creds,
    created_at: '2026-01-02T03:04:05.000Z',
  });
});

it('narrows an existing wider file before writing the new key, and replaces its content', () => {
  const file = path.join(dir, 'credentials.json');
  fs.writeFileSync(file, 'x'.repeat(4096), { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  presentCredentials(creds, { interactive: false, file });
  expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  expect(JSON.parse(fs.readFileSync(file, 'utf8')).personal_api_key).toBe(creds.personal_api_key);
});

it('refuses to follow a symbolic link planted at the path', () => {
  const target = path.join(dir, 'elsewhere.json');
  fs.writeFileSync(target, '{}');
  const file = path.join(dir, 'credentials.json');
  fs.symlinkSync(target, file);
  expect(() => presentCredentials(creds, { interactive: false, file })).toThrow(/ELOOP/);
  expect(fs.readFileSync(target, 'utf8')).toBe('{}');
});

describe('a restart on an existing database', () => {
  it('names the project and the user whose key the hint creates, by uuid', () => {
    const lines = existingStackLines({
      project_id: 7,
      project_api_key: creds.project_api_key,
      user_uuid: creds.user_uuid,
    });
    expect(lines.join('\n')).toContain(creds.project_api_key);
    expect(lines.join('\n')).toContain(`pnpm sett keys create --user ${creds.user_uuid} --scopes "*"`);
    expect(lines.join('\n')).not.toContain('<uuid>');
    expect(lines.join('\n')).toContain('pnpm sett users list');
  });
});
