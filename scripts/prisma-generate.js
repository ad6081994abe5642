#!/usr/bin/env node
// Generates the Prisma client into packages/db/src/generated/prisma (run by `postinstall`).
// pnpm skips Prisma's own install scripts on purpose, so this is how the client gets built.
// `prisma generate` refuses to run without DATABASE_URL even though it never connects, so a
// dummy one is supplied when none is set. Quiet on success, loud (output + exit code) on failure.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const prismaBin = path.join(
  root,
  'node_modules',
  '.bin',
  process.platform === 'win32' ? 'prisma.cmd' : 'prisma',
);
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL || 'postgresql://generate@127.0.0.1:5432/unused',
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  CHECKPOINT_DISABLE: '1',
};

const started = Date.now();
const result = spawnSync(prismaBin, ['generate'], { cwd: root, env, encoding: 'utf8' });
if (result.error || result.status !== 0) {
  process.stderr.write(result.stdout || '');
  process.stderr.write(result.stderr || '');
  if (result.error) process.stderr.write(`${result.error.message}\n`);
  process.stderr.write(`prisma generate failed (exit ${result.status ?? 'none'})\n`);
  process.exit(result.status || 1);
}
process.stdout.write(`prisma client generated in ${Date.now() - started} ms\n`);
