// The `sett` command line: bootstrap a project, create personal API keys, import history.
// With --json only the JSON result goes to stdout; messages go to stderr.
import { parseArgs } from 'node:util';
import { loadConfigOrExit } from '@sett/config';
import { bootstrap } from './bootstrap';
import { CliError, createPersonalKey } from './keys-create';
import { importHistory } from './import-history';

const USAGE = `usage:
  sett bootstrap [--email E] [--org NAME] [--project NAME] [--json]
  sett keys create --user UUID --scopes user:read,early_access_feature:write,... [--label L] [--json]
  sett import --file events.jsonl --api-key phc_... [--url http://127.0.0.1:8000] [--batch-size 1000]`;

function print(json: boolean, value: Record<string, unknown>) {
  if (json) process.stdout.write(`${JSON.stringify(value)}\n`);
  else for (const [k, v] of Object.entries(value)) process.stdout.write(`${k.padEnd(18)} ${String(v)}\n`);
}

async function main(argv: string[]) {
  const config = loadConfigOrExit();
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      email: { type: 'string' },
      org: { type: 'string' },
      project: { type: 'string' },
      user: { type: 'string' },
      scopes: { type: 'string' },
      label: { type: 'string' },
      file: { type: 'string' },
      'api-key': { type: 'string' },
      url: { type: 'string' },
      'batch-size': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, sub] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'bootstrap') {
    const r = await bootstrap({
      databaseUrl: config.databaseUrl,
      redisUrl: config.redisUrl,
      email: values.email,
      organizationName: values.org,
      projectName: values.project,
    });
    print(values.json, {
      organization_id: r.organization_id,
      project_id: r.project_id,
      project_api_key: r.project_api_key,
      personal_api_key: r.personal_api_key,
      user_uuid: r.user_uuid,
    });
    return;
  }
  if (command === 'keys' && sub === 'create') {
    if (!values.user) throw new CliError('--user is required');
    const r = await createPersonalKey({
      databaseUrl: config.databaseUrl,
      userUuid: values.user,
      scopes: (values.scopes ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      label: values.label,
    });
    print(values.json, r);
    return;
  }
  if (command === 'import') {
    if (!values.file || !values['api-key']) throw new CliError('--file and --api-key are required');
    const batchSize = Number(values['batch-size'] ?? 1000);
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new CliError('--batch-size must be a positive integer');
    const r = await importHistory({
      file: values.file,
      apiKey: values['api-key'],
      url: values.url ?? `http://127.0.0.1:${config.ports.edge}`,
      batchSize,
      onProgress: (n) => process.stderr.write(`sent ${n}\r`),
    });
    print(values.json, r);
    return;
  }
  throw new CliError(`unknown command "${positionals.join(' ')}"\n${USAGE}`);
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(
    `sett: ${err instanceof CliError ? err.message : ((err as Error).stack ?? String(err))}\n`,
  );
  process.exit(
    err instanceof CliError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1,
  );
});
