// The `sett` command line: bootstrap a project, manage organizations and users, create and list
// personal API keys, list projects, import history.
// With --json only the JSON result goes to stdout; messages go to stderr.
import { parseArgs } from 'node:util';
import { buildInfo, loadConfigOrExit } from '@sett/config';
import {
  createOrganization,
  createProjectCommand,
  createUser,
  listOrganizations,
  setPassword,
  setStaff,
} from './accounts';
import { readNewPassword } from './password-input';
import { bootstrap } from './bootstrap';
import { CliError, createPersonalKey } from './keys-create';
import { formatTable, listKeys, listProjects, listUsers, setProject } from './listings';
import { ImportUsageError, runImport } from './import/import-command';
import { IMPORT_FORMATS, type ImportFormat } from './import/import-event';

const USAGE = `usage:
  sett --version
  sett bootstrap [--email E] [--org NAME] [--project NAME] [--json]
      (the first user of an empty instance is staff; a new e-mail always gets a new organization)
  sett orgs create --name NAME --owner-email E [--project NAME] [--json]
  sett orgs list [--json]
  sett projects list [--org ORG_ID_OR_SLUG] [--json]
  sett projects create --name NAME --org ORG_ID_OR_SLUG [--timezone Europe/Berlin] [--json]
  sett projects set --id ID [--anonymize-ips on|off] [--geoip on|off] [--json]
  sett users list [--json]
  sett users create --email E --org ORG_ID_OR_SLUG [--level member|admin|owner] [--first-name N]
                    [--scopes S,...] [--with-password] [--json]   (prints the personal API key once)
  sett users set-password --email E [--json]
      (--with-password and set-password prompt on a terminal, or read the first line of stdin;
       a password is never an argument. set-password ends the user's browser sessions.)
  sett users set-staff --email E (--on | --off) [--json]
  sett keys create --user UUID --scopes feature_flag:read,query:read,... [--project ID,...] [--label L] [--json]
      (prints the key once; --project limits it to those projects; an unknown scope is named)
  sett keys list [--user UUID] [--json]              (ids and masks only: keys are never stored)
  sett import --file FILE --api-key phc_... [--format posthog|mixpanel|amplitude] [--url http://127.0.0.1:8000]
              [--dry-run] [--resume] [--allow-rejects] [--rejects FILE] [--checkpoint FILE]
              [--concurrency 4] [--batch-bytes 4194304] [--max-event-bytes 1000000] [--json]
    FILE: JSON lines, a JSON array or CSV with a header (event, distinct_id, timestamp,
    properties.*), optionally gzip-compressed. See docs/import.md.
    Exit codes: 0 done, 3 done with rejected lines (0 with --allow-rejects), 1 failed,
    130 interrupted (resume with --resume), 2 usage.`;

/** An unknown option or a bad value: the message, then the usage (exit 2, no stack trace). */
class UsageError extends CliError {}

function print(json: boolean, value: Record<string, unknown>) {
  if (json) process.stdout.write(`${JSON.stringify(value)}\n`);
  else for (const [k, v] of Object.entries(value)) process.stdout.write(`${k.padEnd(18)} ${String(v)}\n`);
}

async function main(argv: string[]) {
  const { values, positionals } = parseArguments(argv);
  if (values.version) {
    const build = buildInfo();
    process.stdout.write(`sett ${build.version} (${build.gitSha})\n`);
    return;
  }
  const config = loadConfigOrExit();
  const [command, sub] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  await run(config, values, command, sub, positionals);
}

function parseArguments(argv: string[]) {
  try {
    return parseOptions(argv);
  } catch (error) {
    // node's parseArgs: ERR_PARSE_ARGS_UNKNOWN_OPTION, _INVALID_OPTION_VALUE, _UNEXPECTED_POSITIONAL.
    if (String((error as { code?: string }).code).startsWith('ERR_PARSE_ARGS'))
      throw new UsageError((error as Error).message);
    throw error;
  }
}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      email: { type: 'string' },
      org: { type: 'string' },
      project: { type: 'string' },
      user: { type: 'string' },
      name: { type: 'string' },
      'owner-email': { type: 'string' },
      level: { type: 'string' },
      'first-name': { type: 'string' },
      on: { type: 'boolean', default: false },
      'with-password': { type: 'boolean', default: false },
      off: { type: 'boolean', default: false },
      scopes: { type: 'string' },
      label: { type: 'string' },
      file: { type: 'string' },
      'api-key': { type: 'string' },
      url: { type: 'string' },
      format: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      resume: { type: 'boolean', default: false },
      'allow-rejects': { type: 'boolean', default: false },
      rejects: { type: 'string' },
      checkpoint: { type: 'string' },
      concurrency: { type: 'string' },
      'batch-bytes': { type: 'string' },
      'max-event-bytes': { type: 'string' },
      id: { type: 'string' },
      'anonymize-ips': { type: 'string' },
      geoip: { type: 'string' },
      timezone: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
    },
  });
}

async function run(
  config: ReturnType<typeof loadConfigOrExit>,
  values: ReturnType<typeof parseOptions>['values'],
  command: string,
  sub: string | undefined,
  positionals: string[],
) {
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
  if (command === 'orgs' && sub === 'create') {
    const r = await createOrganization({
      databaseUrl: config.databaseUrl,
      redisUrl: config.redisUrl,
      name: values.name,
      ownerEmail: values['owner-email'],
      projectName: values.project,
    });
    print(values.json, r);
    if (!values.json && r.personal_api_key === null)
      process.stderr.write('the owner existed already: no new personal API key was issued\n');
    return;
  }
  if (command === 'orgs' && sub === 'list') {
    const orgs = await listOrganizations({ databaseUrl: config.databaseUrl });
    if (values.json) process.stdout.write(`${JSON.stringify(orgs)}\n`);
    else
      for (const o of orgs)
        process.stdout.write(
          `${o.id}  ${o.slug.padEnd(30)} members ${String(o.members).padStart(4)}  projects ${String(o.projects).padStart(3)}  ${o.name}\n`,
        );
    return;
  }
  if (command === 'projects' && sub === 'create') {
    print(
      values.json,
      await createProjectCommand({
        databaseUrl: config.databaseUrl,
        redisUrl: config.redisUrl,
        name: values.name,
        org: values.org,
        timezone: values.timezone,
      }),
    );
    return;
  }
  if (command === 'projects' && sub === 'list') {
    const projects = await listProjects({ databaseUrl: config.databaseUrl, org: values.org });
    if (values.json) process.stdout.write(`${JSON.stringify(projects)}\n`);
    else
      process.stdout.write(
        formatTable(
          ['ID', 'ORGANIZATION', 'API TOKEN', 'INGESTED', 'ANONYMIZE IPS', 'GEOIP', 'NAME'],
          projects.map((p) => [
            p.id,
            p.organization_slug,
            p.api_token,
            p.ingested_event,
            p.anonymize_ips,
            p.geoip_enabled,
            p.name,
          ]),
        ),
      );
    return;
  }
  if (command === 'projects' && sub === 'set') {
    print(
      values.json,
      await setProject({
        databaseUrl: config.databaseUrl,
        id: values.id,
        anonymizeIps: values['anonymize-ips'],
        geoip: values.geoip,
      }),
    );
    return;
  }
  if (command === 'users' && sub === 'list') {
    const users = await listUsers({ databaseUrl: config.databaseUrl });
    if (values.json) process.stdout.write(`${JSON.stringify(users)}\n`);
    else
      process.stdout.write(
        formatTable(
          ['UUID', 'EMAIL', 'STAFF', 'ACTIVE', 'KEYS', 'ORGANIZATIONS'],
          users.map((u) => [
            u.uuid,
            u.email,
            u.is_staff,
            u.is_active,
            u.personal_api_keys,
            u.organizations.map((o) => `${o.slug}(${o.level})`).join(',') || null,
          ]),
        ),
      );
    return;
  }
  if (command === 'keys' && sub === 'list') {
    const keys = await listKeys({ databaseUrl: config.databaseUrl, userUuid: values.user });
    if (values.json) process.stdout.write(`${JSON.stringify(keys)}\n`);
    else
      process.stdout.write(
        formatTable(
          ['ID', 'USER', 'MASK', 'LAST USED', 'LABEL', 'SCOPES'],
          keys.map((k) => [k.id, k.user_email, k.mask_value, k.last_used_at, k.label, k.scopes.join(',')]),
        ),
      );
    return;
  }
  if (command === 'users' && sub === 'create') {
    const r = await createUser({
      databaseUrl: config.databaseUrl,
      email: values.email,
      org: values.org,
      level: values.level,
      firstName: values['first-name'],
      scopes: values.scopes,
      password: values['with-password'] ? await readNewPassword() : undefined,
    });
    print(values.json, r);
    return;
  }
  if (command === 'users' && sub === 'set-password') {
    if (!values.email) throw new CliError('--email is required');
    const password = await readNewPassword();
    print(values.json, await setPassword({ databaseUrl: config.databaseUrl, email: values.email, password }));
    return;
  }
  if (command === 'users' && sub === 'set-staff') {
    if (values.on === values.off) throw new CliError('users set-staff needs exactly one of --on and --off');
    print(
      values.json,
      await setStaff({ databaseUrl: config.databaseUrl, email: values.email, on: values.on }),
    );
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
      projects: values.project
        ? values.project.split(',').map((p) => {
            const id = Number(p.trim());
            if (!Number.isInteger(id) || id < 1)
              throw new CliError(`--project takes project ids; got "${p}"`);
            return id;
          })
        : undefined,
    });
    print(values.json, r);
    return;
  }
  if (command === 'import') {
    if (!values.file || !values['api-key']) throw new CliError('--file and --api-key are required');
    const format = (values.format ?? 'posthog') as ImportFormat;
    if (!IMPORT_FORMATS.includes(format))
      throw new CliError(`--format must be one of ${IMPORT_FORMATS.join(', ')}`);
    const positive = (name: string, v: string | undefined): number | undefined => {
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new CliError(`--${name} must be a positive integer`);
      return n;
    };
    // Ctrl-C: stop reading, abort requests in flight, write the checkpoint, exit 130. A second
    // Ctrl-C exits at once (the checkpoint from the last acknowledged batch is still valid).
    const interrupt = new AbortController();
    process.on('SIGINT', () => {
      if (interrupt.signal.aborted) process.exit(130);
      process.stderr.write('\ninterrupted: writing the checkpoint (Ctrl-C again to quit now)\n');
      interrupt.abort(new Error('interrupted'));
    });
    const r = await runImport({
      file: values.file,
      apiKey: values['api-key'],
      url: values.url ?? `http://127.0.0.1:${config.ports.edge}`,
      format,
      dryRun: values['dry-run'],
      resume: values.resume,
      rejectsPath: values.rejects,
      checkpointPath: values.checkpoint,
      concurrency: positive('concurrency', values.concurrency),
      batchBytes: positive('batch-bytes', values['batch-bytes']),
      maxEventBytes: positive('max-event-bytes', values['max-event-bytes']) ?? config.kafka.messageMaxBytes,
      signal: interrupt.signal,
    }).catch((e: unknown) => {
      throw e instanceof ImportUsageError ? new CliError(e.message) : e;
    });
    print(values.json, r);
    if (!values.json) {
      if (r.status === 'interrupted' || r.status === 'failed')
        process.stderr.write(`checkpoint written: continue with the same command and --resume\n`);
      if (r.rejected > 0)
        process.stderr.write(`${r.rejected} rejected line(s), with reasons, in ${r.rejects_file}\n`);
      if (!r.dry_run)
        process.stderr.write(
          'accepted: events capture acknowledged (200 only once Kafka stored every event it kept; the importer\n' +
            "applies capture's drop rules first, so none of them is dropped there). Ingestion writes them to\n" +
            'Postgres asynchronously; count the rows there to see them stored.\n',
        );
    }
    process.exitCode =
      r.status === 'interrupted'
        ? 130
        : r.status === 'failed'
          ? 1
          : r.rejected > 0 && !values['allow-rejects']
            ? 3
            : 0;
    return;
  }
  throw new UsageError(`unknown command "${positionals.join(' ')}"`);
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError) process.stderr.write(`sett: ${err.message}\n${USAGE}\n`);
  else
    process.stderr.write(
      `sett: ${err instanceof CliError ? err.message : ((err as Error).stack ?? String(err))}\n`,
    );
  process.exit(err instanceof CliError ? 2 : 1);
});
