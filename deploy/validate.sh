#!/usr/bin/env bash
# Checks the deployment files without a container engine or a cluster: runs every check whose
# tool is available, prints "ok:", "skipped:" or "FAIL:" for each, and exits non-zero only when
# a check that ran found a real problem (a missing tool is never a failure).
#
#   bash deploy/validate.sh
#
# Tools: docker compose (v2) or docker-compose (v1.29), nginx, caddy, promtool, python3 with
# PyYAML, node, kubectl (for kustomize), kubeconform and hadolint when present. Missing Debian
# tools (docker-compose nginx caddy prometheus, the last for promtool) are installed with
# apt-get when running as root on Debian, and the npm packages of the Kubernetes schema check
# (kubernetes-models, yaml) into ~/.cache/sett-validate; SETT_VALIDATE_INSTALL=0 turns both off.
# Nothing is left running.
set -uo pipefail
cd "$(dirname "$0")/.."

failures=0
ok() { echo "ok:      $*"; }
skip() { echo "skipped: $*"; }
fail() { echo "FAIL:    $*"; failures=$((failures + 1)); }
have() { command -v "$1" > /dev/null 2>&1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- tools ----------------------------------------------------------------------------------
install="${SETT_VALIDATE_INSTALL:-1}"
apt_missing=""
have docker-compose || docker compose version > /dev/null 2>&1 || apt_missing="$apt_missing docker-compose"
[ -x /usr/sbin/nginx ] || have nginx || apt_missing="$apt_missing nginx"
have caddy || apt_missing="$apt_missing caddy"
have promtool || apt_missing="$apt_missing prometheus"
if [ -n "$apt_missing" ] && [ "$install" = 1 ] && [ "$(id -u)" = 0 ] && have apt-get; then
  echo "installing:$apt_missing (apt-get)"
  # policy-rc.d in Debian images keeps the nginx and prometheus packages from starting daemons.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $apt_missing > "$tmp/apt.log" 2>&1 \
    || { echo "  apt-get install failed (see below); the checks needing it are skipped"; tail -5 "$tmp/apt.log"; }
fi
schema_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sett-validate"
if have node && [ ! -d "$schema_dir/node_modules/kubernetes-models" ] && [ "$install" = 1 ] && have npm; then
  echo "installing: kubernetes-models yaml (npm, into $schema_dir)"
  mkdir -p "$schema_dir" && [ -f "$schema_dir/package.json" ] || echo '{"private":true}' > "$schema_dir/package.json"
  (cd "$schema_dir" && npm install --silent --no-audit --no-fund kubernetes-models@5.1.0 yaml@2.8.1 > /dev/null 2>&1) \
    || echo "  npm install failed; the Kubernetes schema check is skipped"
fi

# ---- shell and node helpers ----------------------------------------------------------------
if sh -n deploy/docker/create-topics.sh; then ok "create-topics.sh parses (sh -n)"; else fail "create-topics.sh syntax"; fi
if have node; then
  if node --check deploy/docker/healthcheck.mjs; then
    ok "healthcheck.mjs parses (node --check)"
  else
    fail "node --check"
  fi
else
  skip "node --check (no node)"
fi

# ---- docker-compose.yml: the real Compose implementation -----------------------------------
# The secrets compose requires, as placeholders (the files are only rendered, never run).
export POSTGRES_PASSWORD=validate REDIS_PASSWORD=validate SETT_ENCRYPTION_KEY=validate
if docker compose version > /dev/null 2>&1; then
  if out=$(env -u POSTGRES_PASSWORD docker compose -f docker-compose.yml config -q 2>&1); then
    fail "docker compose config accepted a missing POSTGRES_PASSWORD"
  else
    ok "docker compose refuses to render without POSTGRES_PASSWORD"
  fi
  if out=$(docker compose -f docker-compose.yml config -q 2>&1); then
    ok "docker compose config -q (Compose v2, full spec)"
  else
    fail "docker compose config: $out"
  fi
  if out=$(KAFKA_BROKERS=broker:9092 docker compose -f docker-compose.yml -f deploy/docker/compose.external-kafka.yml config -q 2>&1); then
    ok "docker compose config -q with compose.external-kafka.yml"
  else
    fail "docker compose config (external kafka overlay): $out"
  fi
elif have docker-compose; then
  # v1 predates the top-level `name:` and `!reset`; everything else (including
  # service_completed_successfully, added in 1.29) it validates against the spec schema.
  version="$(docker-compose version --short 2>/dev/null || echo 0)"
  grep -v '^name: ' docker-compose.yml > "$tmp/docker-compose.yml"
  if out=$(docker-compose --project-directory . -f "$tmp/docker-compose.yml" config -q 2>&1); then
    ok "docker-compose ${version} config -q (top-level name: removed for v1)"
  else
    fail "docker-compose config: $out"
  fi
  missing_secrets=""
  for secret in POSTGRES_PASSWORD REDIS_PASSWORD SETT_ENCRYPTION_KEY; do
    if env -u "$secret" docker-compose --project-directory . -f "$tmp/docker-compose.yml" config -q > /dev/null 2>&1; then
      missing_secrets="$missing_secrets $secret"
    fi
  done
  if [ -z "$missing_secrets" ]; then
    ok "docker-compose refuses to render without POSTGRES_PASSWORD, REDIS_PASSWORD or SETT_ENCRYPTION_KEY"
  else
    fail "docker-compose renders without:$missing_secrets"
  fi
  skip "compose.external-kafka.yml with docker-compose v1 (uses !reset, Compose >= 2.24)"
else
  skip "compose config (neither docker compose v2 nor docker-compose installed)"
fi

# ---- compose and Kubernetes: parse and cross-check references -------------------------------
if have python3 && python3 -c 'import yaml' 2> /dev/null; then
  if python3 - <<'PY'; then ok "compose + k8s reference checks (python3/PyYAML)"; else fail "compose + k8s reference checks"; fi
import glob, os, re, sys, yaml

errors = []
def err(msg): errors.append(msg)

class Loader(yaml.SafeLoader): pass
# Compose's `!reset` / `!override` tags (overlay files) parse as their plain values.
for tag in ('!reset', '!override'):
    Loader.add_constructor(tag, lambda l, n: l.construct_mapping(n) if isinstance(n, yaml.MappingNode)
                           else l.construct_sequence(n) if isinstance(n, yaml.SequenceNode) else l.construct_scalar(n))

def load_all(path):
    with open(path) as f:
        return [d for d in yaml.load_all(f, Loader=Loader) if d is not None]

# Entry points scripts/build.mjs compiles to dist/<name>.cjs: what commands may run.
build_src = open('scripts/build.mjs').read()
entries = set(re.findall(r"^\s+'?([a-z][a-z-]*)'?: '[^']+\.ts',$", build_src[build_src.index('const ENTRIES'):build_src.index('};', build_src.index('const ENTRIES'))], re.M))
entries.add('prisma.config')
def check_command(where, cmd):
    parts = cmd if isinstance(cmd, list) else str(cmd).split()
    if any('tsx' in str(p) for p in parts): err(f'{where}: command still runs through tsx: {parts}')
    for part in parts:
        m = re.fullmatch(r'dist/(.+)\.cjs', str(part))
        if m and m.group(1) not in entries: err(f'{where}: runs {part}, which scripts/build.mjs does not build ({sorted(entries)})')
        if str(part).startswith(('services/', 'packages/')) and not os.path.exists(part): err(f'{where}: runs missing {part}')

# ---- compose ----
compose = load_all('docker-compose.yml')[0]
services = compose.get('services', {})
shutdown_ms = int(re.search(r'(\d+)', str(compose['x-sett-env']['SHUTDOWN_TIMEOUT_MS'])).group(1))
required_env = ['NODE_ENV', 'HOST', 'DATABASE_URL', 'REDIS_URL', 'KAFKA_BROKERS', 'LOG_LEVEL', 'LOG_FORMAT']
one_shots = {'migrate', 'kafka-init'}
for name in ['kafka', 'kafka-init', 'postgres', 'redis', 'migrate', 'capture', 'decide', 'management',
             'ingestion', 'ingestion-historical', 'edge', 'https']:
    if name not in services: err(f'compose: service {name} missing')
for name, svc in services.items():
    deps = svc.get('depends_on', {})
    if isinstance(deps, list): deps = {d: {'condition': 'service_started'} for d in deps}
    for dep, spec in deps.items():
        cond = (spec or {}).get('condition', 'service_started')
        if dep not in services: err(f'compose: {name} depends on unknown service {dep}'); continue
        target = services[dep]
        if cond == 'service_healthy':
            hc = target.get('healthcheck')
            if not hc or hc.get('disable'): err(f'compose: {name} waits for {dep} healthy but {dep} has no healthcheck')
        elif cond == 'service_completed_successfully':
            if str(target.get('restart', 'no')) != 'no': err(f'compose: {name} waits for one-shot {dep}, whose restart is not "no"')
        elif cond != 'service_started':
            err(f'compose: {name} -> {dep}: unknown condition {cond}')
    if name not in one_shots:
        hc = svc.get('healthcheck')
        if not hc or hc.get('disable'): err(f'compose: long-running service {name} has no healthcheck')
    for vol in svc.get('volumes', []):
        src = vol.split(':')[0] if isinstance(vol, str) else vol.get('source', '')
        if src.startswith('.') and not os.path.exists(src): err(f'compose: {name} mounts missing {src}')
        elif not src.startswith(('.', '/')) and src not in (compose.get('volumes') or {}): err(f'compose: {name} uses undeclared volume {src}')
    build = svc.get('build')
    if build and not os.path.exists(os.path.join(build.get('context', '.'), build.get('dockerfile', 'Dockerfile'))):
        err(f'compose: {name} builds from a missing Dockerfile')
    if svc.get('command') and str(svc.get('image', '')).startswith('${SETT_IMAGE'): check_command(f'compose: {name}', svc['command'])
    # Exact image versions: major.minor.patch (Postgres numbers its releases major.minor).
    image = str(svc.get('image', ''))
    if image and not image.startswith('${SETT_IMAGE'):
        repo, _, tag = image.rpartition(':')
        version = re.match(r'\d+(\.\d+)*', tag)
        parts_needed = 2 if repo == 'postgres' else 3
        if not version or version.group(0).count('.') + 1 < parts_needed:
            err(f'compose: {name} image {image} is not pinned to an exact version')
    if svc.get('image', '').startswith('${SETT_IMAGE'):
        env = svc.get('environment') or {}
        for key in required_env:
            if key not in env: err(f'compose: {name} lacks env {key}')
        if name not in one_shots:
            grace = str(svc.get('stop_grace_period', '10s'))
            if not grace.endswith('s') or int(grace[:-1]) * 1000 <= shutdown_ms:
                err(f'compose: {name} stop_grace_period {grace} not longer than SHUTDOWN_TIMEOUT_MS {shutdown_ms}')
# Secrets are required, never defaulted.
env = compose['x-sett-env']
for key, var in (('DATABASE_URL', 'POSTGRES_PASSWORD'), ('REDIS_URL', 'REDIS_PASSWORD')):
    if f'${{{var}:?' not in str(env.get(key, '')): err(f'compose: {key} does not require {var} (${{{var}:?...}})')
if '${POSTGRES_PASSWORD:?' not in str(services['postgres']['environment'].get('POSTGRES_PASSWORD')): err('compose: postgres does not require POSTGRES_PASSWORD')
if 'requirepass' not in str(services['redis'].get('command')): err('compose: redis runs without a password')
# Plain HTTP only on loopback unless asked for.
if not any(str(p).startswith('${SETT_HTTP_BIND:-127.0.0.1}:') for p in services['edge'].get('ports', [])): err('compose: the edge publishes plain HTTP beyond loopback by default')
# no dependency cycles
def visit(n, stack):
    if n in stack: err(f'compose: dependency cycle {" -> ".join(stack + [n])}'); return
    for d in (services.get(n, {}).get('depends_on') or {}): visit(d, stack + [n])
for n in services: visit(n, [])
topics = {'ingestion': 'main,overflow', 'ingestion-historical': 'historical'}
for n, t in topics.items():
    if services.get(n, {}).get('environment', {}).get('INGESTION_TOPICS') != t: err(f'compose: {n} INGESTION_TOPICS != {t}')
load_all('deploy/docker/compose.external-kafka.yml')

# ---- kubernetes ----
k8s = 'deploy/k8s'
kust = load_all(f'{k8s}/kustomization.yaml')[0]
files = sorted(os.path.basename(p) for p in glob.glob(f'{k8s}/*.yaml'))
listed = kust.get('resources', [])
for r in listed:
    if not os.path.exists(f'{k8s}/{r}'): err(f'k8s: kustomization lists missing {r}')
for f in files:
    if f not in listed and f not in ('kustomization.yaml', 'secret.example.yaml'): err(f'k8s: {f} not in kustomization.yaml')
objs = []
for f in files:
    if f == 'kustomization.yaml': continue
    for d in load_all(f'{k8s}/{f}'):
        for key in ('apiVersion', 'kind'):
            if key not in d: err(f'k8s: {f}: document without {key}')
        if not d.get('metadata', {}).get('name'): err(f'k8s: {f}: {d.get("kind")} without metadata.name')
        objs.append((f, d))
by_kind = {}
for f, d in objs: by_kind.setdefault(d['kind'], {})[d['metadata']['name']] = d
cm = by_kind.get('ConfigMap', {}).get('sett-config', {}).get('data', {})
for k, v in cm.items():
    if not isinstance(v, str): err(f'k8s: ConfigMap value {k} is not a string')
k8s_shutdown = int(cm.get('SHUTDOWN_TIMEOUT_MS', '25000'))
deployments = by_kind.get('Deployment', {})
def pod_labels(dep): return dep['spec']['template']['metadata'].get('labels', {})
for name, dep in deployments.items():
    sel = dep['spec']['selector']['matchLabels']
    if any(pod_labels(dep).get(k) != v for k, v in sel.items()): err(f'k8s: {name} selector does not match its pod labels')
    pod = dep['spec']['template']['spec']
    for c in pod['containers']:
        for probe in ('readinessProbe', 'livenessProbe'):
            if probe not in c: err(f'k8s: {name}/{c["name"]} has no {probe}')
        for p in ('readinessProbe', 'livenessProbe', 'startupProbe'):
            port = c.get(p, {}).get('httpGet', {}).get('port')
            if isinstance(port, str) and port not in [x.get('name') for x in c.get('ports', [])]: err(f'k8s: {name} {p} names unknown port {port}')
        pre = c.get('lifecycle', {}).get('preStop', {}).get('exec', {}).get('command', [])
        pre_s = int(pre[1]) if len(pre) == 2 and pre[0] == 'sleep' else 0
        grace = pod.get('terminationGracePeriodSeconds', 30)
        if grace * 1000 <= k8s_shutdown + pre_s * 1000: err(f'k8s: {name} terminationGracePeriodSeconds {grace} <= preStop + SHUTDOWN_TIMEOUT_MS')
        for ef in c.get('envFrom', []):
            if 'configMapRef' in ef and ef['configMapRef']['name'] not in by_kind.get('ConfigMap', {}): err(f'k8s: {name} uses unknown ConfigMap')
            if 'secretRef' in ef and ef['secretRef']['name'] != 'sett-secrets': err(f'k8s: {name} uses unknown Secret')
live_topics = {n: next((e['value'] for c in d['spec']['template']['spec']['containers'] for e in c.get('env', []) if e['name'] == 'INGESTION_TOPICS'), None) for n, d in deployments.items()}
if live_topics.get('sett-ingestion') != 'main,overflow' or live_topics.get('sett-ingestion-historical') != 'historical':
    err(f'k8s: ingestion Deployments INGESTION_TOPICS wrong: {live_topics}')
svcs = by_kind.get('Service', {})
for name, s in svcs.items():
    matches = [n for n, d in deployments.items() if all(pod_labels(d).get(k) == v for k, v in s['spec']['selector'].items())]
    if len(matches) != 1: err(f'k8s: Service {name} selects {matches}')
    else:
        ports = [p.get('name') for c in deployments[matches[0]]['spec']['template']['spec']['containers'] for p in c.get('ports', [])]
        for p in s['spec']['ports']:
            if isinstance(p.get('targetPort'), str) and p['targetPort'] not in ports: err(f'k8s: Service {name} targets unknown port {p["targetPort"]}')
for name, h in by_kind.get('HorizontalPodAutoscaler', {}).items():
    ref = h['spec']['scaleTargetRef']
    if ref['name'] not in deployments: err(f'k8s: HPA {name} targets unknown {ref["name"]}')
    elif 'replicas' in deployments[ref['name']]['spec']: err(f'k8s: {ref["name"]} sets replicas although HPA {name} owns it')
hpa_targets = [h['spec']['scaleTargetRef']['name'] for h in by_kind.get('HorizontalPodAutoscaler', {}).values()]
pdbs = by_kind.get('PodDisruptionBudget', {})
for name, dep in deployments.items():
    pod = dep['spec']['template']['spec']
    if name not in hpa_targets: err(f'k8s: no HPA for {name}')
    if not any(all(pod_labels(dep).get(k) == v for k, v in p['spec']['selector']['matchLabels'].items()) for p in pdbs.values()):
        err(f'k8s: no PodDisruptionBudget selects {name}')
    if not pod.get('topologySpreadConstraints'): err(f'k8s: {name} has no topologySpreadConstraints')
    inits = pod.get('initContainers', [])
    if not any(c.get('command') == ['node', 'dist/wait-for-migrations.cjs'] for c in inits):
        err(f'k8s: {name} does not wait for migrations (init container running dist/wait-for-migrations.cjs)')
for kind in ('Deployment', 'Job'):
    for name, obj in by_kind.get(kind, {}).items():
        pod = obj['spec']['template']['spec']
        if pod.get('automountServiceAccountToken') is not False: err(f'k8s: {kind} {name} mounts a service-account token')
        for c in pod.get('initContainers', []) + pod['containers']:
            if c.get('command'): check_command(f'k8s: {name}/{c["name"]}', c['command'])
            sc = c.get('securityContext', {})
            if sc.get('readOnlyRootFilesystem') is not True: err(f'k8s: {name}/{c["name"]} has a writable root filesystem')
            if sc.get('allowPrivilegeEscalation') is not False: err(f'k8s: {name}/{c["name"]} allows privilege escalation')
# NetworkPolicies: a default deny, and every component a policy names exists.
netpols = by_kind.get('NetworkPolicy', {})
if not any(n['spec'].get('podSelector') == {} and set(n['spec'].get('policyTypes', [])) == {'Ingress', 'Egress'} and not n['spec'].get('ingress') and not n['spec'].get('egress') for n in netpols.values()):
    err('k8s: no default-deny NetworkPolicy')
components = {d['spec']['template']['metadata']['labels'].get('app.kubernetes.io/component') for kind in ('Deployment', 'Job') for d in by_kind.get(kind, {}).values()}
for name, n in netpols.items():
    for expr in n['spec'].get('podSelector', {}).get('matchExpressions', []):
        for value in expr.get('values', []):
            if expr['key'] == 'app.kubernetes.io/component' and value not in components: err(f'k8s: NetworkPolicy {name} names unknown component {value}')
for comp in components:
    egress_ports = {p.get('port') for n in netpols.values() for e in n['spec'].get('egress', []) for p in e.get('ports', [])
                    if not n['spec'].get('podSelector') or comp in [v for x in n['spec']['podSelector'].get('matchExpressions', []) for v in x['values']]}
    if 53 not in egress_ports: err(f'k8s: {comp} pods cannot reach DNS')
routes = {}
for name, ing in by_kind.get('Ingress', {}).items():
    for rule in ing['spec']['rules']:
        for p in rule['http']['paths']:
            b = p['backend']['service']
            if b['name'] not in svcs: err(f'k8s: Ingress {name} -> unknown Service {b["name"]}'); continue
            if b['port'].get('number') not in [sp['port'] for sp in svcs[b['name']]['spec']['ports']]: err(f'k8s: Ingress {name} -> {b["name"]} unknown port')
            routes[p['path']] = (b['name'], p['pathType'], ing['metadata'].get('annotations', {}))
expect = {'/api': 'sett-management'}
for base in ('/i/v0/e', '/e', '/capture', '/track', '/batch', '/engage'):
    expect[base] = expect[base + '/'] = 'sett-capture'
for base in ('/decide', '/flags', '/flags/definitions', '/api/feature_flag/local_evaluation', '/api/early_access_features',
             '/api/surveys', '/api/web_experiments', '/api/product_tours'):
    expect[base] = expect[base + '/'] = 'sett-decide'
expect['/array'] = expect['/static'] = 'sett-decide'
for path, svc in expect.items():
    got = routes.get(path)
    if not got or got[0] != svc: err(f'k8s: Ingress route {path} -> {got and got[0]}, expected {svc}')
    elif svc == 'sett-capture' and got[2].get('nginx.ingress.kubernetes.io/proxy-body-size') != '20m': err(f'k8s: capture route {path} lacks the 20m body size')
jobs = by_kind.get('Job', {})
if not any('migrate' in ' '.join(c.get('command', [])) for j in jobs.values() for c in j['spec']['template']['spec']['containers']):
    err('k8s: no migration Job')
secret = load_all(f'{k8s}/secret.example.yaml')[0]
if 'DATABASE_URL' not in secret.get('stringData', {}): err('k8s: secret template lacks DATABASE_URL')

for e in errors: print('  ' + e)
print(f'  checked {len(services)} compose services, {len(objs)} Kubernetes objects in {len(files)} files')
sys.exit(1 if errors else 0)
PY
else
  skip "compose + k8s reference checks (python3 with PyYAML not installed)"
fi

# ---- Kubernetes: render and validate against the API schemas ---------------------------------
rendered=""
if have kubectl; then
  if out=$(kubectl kustomize deploy/k8s 2>&1 > "$tmp/k8s.yaml"); then ok "kubectl kustomize deploy/k8s"; rendered="$tmp/k8s.yaml"; else fail "kubectl kustomize: $out"; fi
elif have kustomize; then
  if out=$(kustomize build deploy/k8s 2>&1 > "$tmp/k8s.yaml"); then ok "kustomize build deploy/k8s"; rendered="$tmp/k8s.yaml"; else fail "kustomize build: $out"; fi
else
  skip "kustomize (neither kubectl nor kustomize installed)"
fi
if [ -n "$rendered" ] && have node && [ -d "$schema_dir/node_modules/kubernetes-models" ]; then
  # Types, required fields and enums of every object, per its apiVersion (unknown fields are
  # not reported by these schemas; the reference checks above cover the fields Sett relies on).
  if out=$(node deploy/k8s-schema.mjs "$schema_dir" < "$rendered" 2>&1); then
    ok "Kubernetes API schemas (kubernetes-models $(node -p "require('$schema_dir/node_modules/kubernetes-models/package.json').version")): $(echo "$out" | tail -1)"
  else
    echo "$out" | grep -v '^ok' | sed 's/^/  /'
    fail "Kubernetes API schemas"
  fi
else
  skip "Kubernetes API schemas (needs kustomize output, node and kubernetes-models)"
fi
if have kubeconform; then
  if out=$(kubeconform -strict -summary -ignore-filename-pattern 'kustomization.yaml' deploy/k8s 2>&1); then ok "kubeconform: $out"; else fail "kubeconform: $out"; fi
else
  skip "kubeconform schema validation (not installed)"
fi

# ---- Dockerfile -----------------------------------------------------------------------------
if have hadolint; then
  if out=$(hadolint deploy/docker/Dockerfile 2>&1); then ok "hadolint Dockerfile"; else fail "hadolint: $out"; fi
else
  skip "hadolint (not installed)"
fi
if have python3; then
  if out=$(python3 - <<'PY' 2>&1
import re, sys
text = open('deploy/docker/Dockerfile').read()
lines = [l.strip() for l in re.sub(r'\\\n', ' ', text).splitlines() if l.strip() and not l.strip().startswith('#')]
errors = []
args = {m.group(1): m.group(2) for m in (re.match(r'ARG (\w+)=(\S+)', l) for l in lines) if m}
stages = []
for l in lines:
    m = re.match(r'FROM (\S+)(?: AS (\w+))?', l, re.I)
    if m:
        image = re.sub(r'\$\{(\w+)\}', lambda a: args.get(a.group(1), ''), m.group(1))
        stages.append({'image': image, 'name': m.group(2), 'lines': []})
    elif stages:
        stages[-1]['lines'].append(l)
if len(stages) < 2: errors.append('not a multi-stage build')
for st in stages:
    m = re.fullmatch(r'node:(\d+)\.(\d+)\.(\d+)-[a-z]+(-slim)?', st['image'])
    if not m: errors.append(f'stage {st["name"]}: base {st["image"]} is not node:<exact version>-<distro>')
    elif int(m.group(1)) not in (22, 24): errors.append(f'stage {st["name"]}: Node {m.group(1)} is not a supported LTS (22 or 24)')
final = stages[-1]['lines'] if stages else []
user = [l.split()[1] for l in final if l.startswith('USER ')]
if not user or user[-1] in ('root', '0'): errors.append('the runtime stage does not switch to a non-root USER')
cmd = [l for l in final if l.startswith('CMD ')]
if not cmd or 'tsx' in cmd[-1] or 'dist/' not in cmd[-1]: errors.append(f'the runtime CMD does not run a compiled bundle: {cmd}')
copies = [l for l in final if l.startswith('COPY ')]
if any('--from=' not in l for l in copies): errors.append(f'the runtime stage copies from the build context: {copies}')
if any(re.search(r'\b(pnpm|npm) (install|i|ci)\b', l) for l in final): errors.append('the runtime stage installs packages')
if not any(l.startswith('HEALTHCHECK ') for l in final): errors.append('no HEALTHCHECK')
if 'scripts/build.mjs --runtime' not in text: errors.append('the build stage does not run scripts/build.mjs --runtime')
print('\n'.join(errors) or f'{len(stages)} stages, base {stages[-1]["image"]}, user {user[-1]}')
sys.exit(1 if errors else 0)
PY
  ); then ok "Dockerfile structure: $out"; else fail "Dockerfile structure: $out"; fi
fi
missing=""
for f in pnpm-lock.yaml pnpm-workspace.yaml package.json prisma.config.ts prisma/schema.prisma deploy/docker/healthcheck.mjs scripts/build.mjs scripts/wait-for-migrations.ts .dockerignore; do
  [ -e "$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "files the Dockerfile relies on exist"; else fail "missing for the image:$missing"; fi
if docker buildx version > /dev/null 2>&1 && docker info > /dev/null 2>&1; then
  if out=$(docker build --check -f deploy/docker/Dockerfile . 2>&1); then ok "docker build --check"; else fail "docker build --check: $out"; fi
else
  skip "docker build --check (no Docker engine)"
fi

# ---- the edge: generated proxy configs, run by the real proxies ----------------------------
# scripts/proxy-test.ts starts its own nginx or Caddy on a free loopback port with a copy of the
# shipped config pointed at stand-in services, sends every probe of the edge routing and the
# header, request-id, body-limit and service-down checks, and stops everything before returning.
if have node && [ -x node_modules/.bin/tsx ]; then
  if out=$(node_modules/.bin/tsx scripts/routes.ts --check 2>&1); then ok "$out"; else fail "$out"; fi
fi
nginx_bin="$(command -v nginx || ls /usr/sbin/nginx 2> /dev/null || true)"
if [ -n "$nginx_bin" ] && have node && [ -x node_modules/.bin/tsx ]; then
  if out=$(node_modules/.bin/tsx scripts/proxy-test.ts nginx "$nginx_bin" 2>&1); then
    ok "nginx -t and edge routes ($("$nginx_bin" -v 2>&1 | sed 's/.*version: //'); $(echo "$out" | grep -c '^ok') checks)"
  else
    echo "$out" | grep -v '^ok' | sed 's/^/  /'
    fail "nginx edge routes"
  fi
else
  skip "nginx -t and edge routes (nginx, node or the workspace not installed)"
fi

if have caddy; then
  # The reverse proxy's upstreams (capture:8002, ...) are only resolved when a request arrives.
  if out=$(SETT_DOMAIN=sett.example.com caddy validate --config deploy/caddy/Caddyfile --adapter caddyfile 2>&1); then
    ok "caddy validate deploy/caddy/Caddyfile ($(caddy version | cut -d' ' -f1))"
  else
    fail "caddy validate: $(echo "$out" | tail -3)"
  fi
  if have node && [ -x node_modules/.bin/tsx ]; then
    if out=$(node_modules/.bin/tsx scripts/proxy-test.ts caddy "$(command -v caddy)" 2>&1); then
      ok "Caddy edge routes ($(echo "$out" | grep -c '^ok') checks)"
    else
      echo "$out" | grep -v '^ok' | sed 's/^/  /'
      fail "Caddy edge routes"
    fi
  fi
else
  skip "caddy validate and edge routes (caddy not installed)"
fi

# ---- the compiled runtime: build it, run one service from it -------------------------------
# What the Dockerfile's build stage does, on this machine: bundle every entry point, lay out the
# runtime tree (bundles + production node_modules closure), then start management from that tree
# with plain `node` (no tsx anywhere in it) and probe it the way the image's HEALTHCHECK does.
metrics_file=""
if have node && [ -d node_modules/.pnpm ] && [ -d packages/db/src/generated ]; then
  runtime="$tmp/runtime"
  if out=$(node scripts/build.mjs --runtime "$runtime" 2>&1); then
    ok "scripts/build.mjs --runtime: $(echo "$out" | tail -1 | sed "s|$runtime|<tmp>|"), $(du -sh --apparent-size "$runtime" | cut -f1) on disk"
    if [ -e "$runtime/node_modules/tsx" ] || [ -e "$runtime/node_modules/typescript" ] || find "$runtime/dist" -name '*.ts' | grep -q .; then
      fail "the runtime tree carries TypeScript tooling or sources"
    fi
    port="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
    # Nothing listens on port 1: the service starts anyway and reports its dependencies on /_ready.
    (cd "$runtime" && exec env -i PATH="$PATH" NODE_ENV=production HOST=127.0.0.1 MANAGEMENT_PORT="$port" \
      SETT_ENCRYPTION_KEY="$(printf '%064d' 0)" DATABASE_URL=postgresql://validate@127.0.0.1:1/validate \
      REDIS_URL=redis://127.0.0.1:1 LOG_LEVEL=warn node dist/management.cjs > "$tmp/management.log" 2>&1) &
    pid=$!
    up=""
    for _ in $(seq 1 50); do
      if (cd "$runtime" && MANAGEMENT_PORT="$port" node deploy/docker/healthcheck.mjs /_health > /dev/null 2>&1); then up=1; break; fi
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.2
    done
    if [ -n "$up" ]; then
      ok "node dist/management.cjs answers /_health from the runtime tree (found by healthcheck.mjs)"
      if node -e "fetch('http://127.0.0.1:$port/_metrics').then(r=>r.text()).then(t=>process.stdout.write(t))" > "$tmp/metrics.txt" 2> /dev/null; then
        metrics_file="$tmp/metrics.txt"
      fi
    else
      fail "node dist/management.cjs did not answer /_health: $(tail -5 "$tmp/management.log")"
    fi
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    # The migration command of compose and the migrate Job, as far as it goes without a database:
    # the Prisma CLI loads the compiled config and the schema from the runtime tree.
    if out=$(cd "$runtime" && env -i PATH="$PATH" HOME="$tmp" CHECKPOINT_DISABLE=1 PRISMA_HIDE_UPDATE_MESSAGE=1 \
      DATABASE_URL=postgresql://validate@127.0.0.1:1/validate \
      node node_modules/prisma/build/index.js validate --config dist/prisma.config.cjs 2>&1); then
      ok "prisma validate --config dist/prisma.config.cjs from the runtime tree"
    else
      fail "prisma with the compiled config: $(echo "$out" | tail -3)"
    fi
    # The init container gives up with a clear line when its deadline passes.
    out=$(cd "$runtime" && env -i PATH="$PATH" DATABASE_URL=postgresql://validate@127.0.0.1:1/validate \
      MIGRATIONS_WAIT_TIMEOUT_MS=1 node dist/wait-for-migrations.cjs 2>&1)
    if [ $? -eq 1 ] && echo "$out" | grep -q 'gave up after'; then
      ok "dist/wait-for-migrations.cjs runs and honours its deadline"
    else
      fail "dist/wait-for-migrations.cjs: $out"
    fi
  else
    fail "scripts/build.mjs: $out"
  fi
else
  skip "compiled runtime (needs node and the workspace installed: pnpm install)"
fi

# ---- Prometheus rules, their tests, the example config, the dashboard's queries --------------
if have promtool; then
  if out=$(promtool check rules deploy/monitoring/sett-alerts.yaml 2>&1); then ok "promtool check rules: $(echo "$out" | grep -o '[0-9]* rules found')"; else fail "promtool check rules: $out"; fi
  if out=$(promtool test rules deploy/monitoring/sett-alerts.test.yaml 2>&1); then ok "promtool test rules (sett-alerts.test.yaml)"; else fail "promtool test rules: $out"; fi
  if out=$(cd deploy/monitoring && promtool check config prometheus.example.yml 2>&1); then ok "promtool check config prometheus.example.yml"; else fail "promtool check config: $out"; fi
  if [ -n "$metrics_file" ]; then
    # Lint findings (naming advice) are printed but only a parse error fails the check.
    if out=$(promtool check metrics < "$metrics_file" 2>&1) || ! echo "$out" | grep -qi 'error'; then
      ok "promtool check metrics on management's /_metrics"
    else
      fail "promtool check metrics: $out"
    fi
  fi
  # Every dashboard query as a recording rule, so promtool parses it.
  if have python3; then
    python3 - "$tmp/dashboard-rules.yaml" <<'PY'
import json, sys, yaml
d = json.load(open('deploy/monitoring/sett-dashboard.json'))
exprs = [t['expr'] for p in d['panels'] for t in p.get('targets', [])]
rules = [{'record': f'sett:dashboard_query_{i}', 'expr': e} for i, e in enumerate(exprs)]
yaml.safe_dump({'groups': [{'name': 'dashboard', 'rules': rules}]}, open(sys.argv[1], 'w'))
PY
    if out=$(promtool check rules "$tmp/dashboard-rules.yaml" 2>&1); then
      ok "dashboard queries parse ($(echo "$out" | grep -o '[0-9]* rules found' | cut -d' ' -f1) queries)"
    else
      fail "dashboard queries: $out"
    fi
  fi
else
  skip "promtool checks (prometheus not installed)"
fi
# The metric names the rules and the dashboard use must be ones the services export.
if have python3; then
  if out=$(python3 - "$metrics_file" <<'PY' 2>&1
import glob, json, re, sys, yaml
defined = set()
for f in glob.glob('packages/*/src/**/*.ts', recursive=True) + glob.glob('services/*/src/**/*.ts', recursive=True):
    defined |= set(re.findall(r"name: '([a-z_:]+)'", open(f).read()))
if len(sys.argv) > 1 and sys.argv[1]:
    defined |= set(re.findall(r'^# TYPE (\S+)', open(sys.argv[1]).read(), re.M))
rules = yaml.safe_load(open('deploy/monitoring/sett-alerts.yaml'))
exprs = [r['expr'] for g in rules['groups'] for r in g['rules']]
recorded = {r['record'] for g in rules['groups'] for r in g['rules'] if 'record' in r}
d = json.load(open('deploy/monitoring/sett-dashboard.json'))
exprs += [t['expr'] for p in d['panels'] for t in p.get('targets', [])]
# Names from outside Sett: Prometheus itself, kube-state-metrics, prom-client's process metrics.
external = re.compile(r'^(up|kube_\w+|process_\w+|nodejs_\w+)$')
words = {'sum', 'rate', 'by', 'max', 'and', 'or', 'count', 'increase', 'histogram_quantile', 'deriv', 'topk', 'le', 'on', 'without'}
unknown = set()
for e in exprs:
    e = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^\]]*\]', ' ', e)
    for name in re.findall(r'[a-zA-Z_:][a-zA-Z0-9_:]*', e):
        if name in words or name in recorded or external.match(name) or re.match(r'^\d', name): continue
        base = re.sub(r'_(bucket|sum|count)$', '', name)
        if name not in defined and base not in defined and not re.match(r'^(group|topic|partition|status|service|route|endpoint|outcome|reason|stage|pod|namespace|instance|version|node_version|job)$', name):
            unknown.add(name)
print(', '.join(sorted(unknown)) or f'{len(exprs)} expressions')
sys.exit(1 if unknown else 0)
PY
  ); then ok "alert and dashboard metric names exist in the services: $out"; else fail "metric names not exported by any service: $out"; fi
fi

echo
if [ "$failures" -eq 0 ]; then echo "deploy/validate.sh: all checks that ran passed"; else echo "deploy/validate.sh: $failures failed"; fi
exit $((failures > 0))
