// Kubernetes schema validation for deploy/validate.sh, with no cluster: every object of the
// rendered kustomization (read from stdin) is checked against the OpenAPI schema of its
// apiVersion and kind, as shipped by the npm package `kubernetes-models` (the JSON schemas of
// the Kubernetes API, compiled to validators). Unknown kinds and unknown fields are errors, as
// with kubeconform -strict.
//
//   kubectl kustomize deploy/k8s | node deploy/k8s-schema.mjs <dir with node_modules>
//
// <dir> holds `kubernetes-models` and `yaml` (validate.sh installs them there from npm).
// Exit 0 when every object is valid; prints one line per object either way.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = path.join(path.resolve(process.argv[2] ?? '.'), 'node_modules');
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);
const YAML = await load('yaml/dist/index.js');

const docs = YAML.parseAllDocuments(readFileSync(0, 'utf8'))
  .map((d) => d.toJS())
  .filter(Boolean);
let failures = 0;
for (const doc of docs) {
  const label = `${doc.kind}/${doc.metadata?.name}`;
  const file = path.join('kubernetes-models', doc.apiVersion, `${doc.kind}.js`);
  if (!existsSync(path.join(modules, file))) {
    console.log(`FAIL ${label}: no schema for ${doc.apiVersion} ${doc.kind}`);
    failures++;
    continue;
  }
  const model = (await load(file))[doc.kind];
  try {
    new model(doc).validate();
    console.log(`ok   ${label} (${doc.apiVersion})`);
  } catch (err) {
    console.log(`FAIL ${label}: ${err instanceof Error ? err.message : String(err)}`);
    failures++;
  }
}
console.log(
  failures === 0
    ? `schemas: ${docs.length} objects valid`
    : `schemas: ${failures} of ${docs.length} objects invalid`,
);
process.exit(failures === 0 ? 0 : 1);
