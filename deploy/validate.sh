#!/usr/bin/env bash
# Checks the deployment files without a container engine or a cluster: runs every check whose
# tool is installed, prints "ok:", "skipped:" or "FAIL:" for each, and exits non-zero only when
# a check that ran found a real problem (a missing tool is never a failure).
#
#   bash deploy/validate.sh
#
# Tools it uses when present: docker compose (v2) or docker-compose (v1.29, Debian's
# `docker-compose` package), nginx (Debian's `nginx-light`), python3 with PyYAML, node,
# kubectl, kubeconform, hadolint. Nothing is installed and nothing is left running.
set -uo pipefail
cd "$(dirname "$0")/.."

failures=0
ok() { echo "ok:      $*"; }
skip() { echo "skipped: $*"; }
fail() { echo "FAIL:    $*"; failures=$((failures + 1)); }
have() { command -v "$1" > /dev/null 2>&1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- shell and node helpers ----------------------------------------------------------------
if sh -n deploy/docker/create-topics.sh; then ok "create-topics.sh parses (sh -n)"; else fail "create-topics.sh syntax"; fi
if have node; then
  if node --check deploy/docker/healthcheck.mjs && node --check deploy/nginx/route-test.mjs; then
    ok "healthcheck.mjs and route-test.mjs parse (node --check)"
  else
    fail "node --check"
  fi
else
  skip "node --check (no node)"
fi

# ---- docker-compose.yml: the real Compose implementation -----------------------------------
if docker compose version > /dev/null 2>&1; then
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

# ---- compose ----
compose = load_all('docker-compose.yml')[0]
services = compose.get('services', {})
shutdown_ms = int(re.search(r'(\d+)', str(compose['x-sett-env']['SHUTDOWN_TIMEOUT_MS'])).group(1))
required_env = ['NODE_ENV', 'HOST', 'DATABASE_URL', 'REDIS_URL', 'KAFKA_BROKERS', 'LOG_LEVEL', 'LOG_FORMAT']
one_shots = {'migrate', 'kafka-init'}
for name in ['kafka', 'kafka-init', 'postgres', 'redis', 'migrate', 'capture', 'decide', 'management',
             'ingestion', 'ingestion-historical', 'edge']:
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
    cmd = svc.get('command') or []
    for part in cmd if isinstance(cmd, list) else cmd.split():
        if part.startswith(('services/', 'packages/')) and not os.path.exists(part): err(f'compose: {name} runs missing {part}')
    if svc.get('image', '').startswith('${SETT_IMAGE'):
        env = svc.get('environment') or {}
        for key in required_env:
            if key not in env: err(f'compose: {name} lacks env {key}')
        if name not in one_shots:
            grace = str(svc.get('stop_grace_period', '10s'))
            if not grace.endswith('s') or int(grace[:-1]) * 1000 <= shutdown_ms:
                err(f'compose: {name} stop_grace_period {grace} not longer than SHUTDOWN_TIMEOUT_MS {shutdown_ms}')
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
for want in ('sett-capture', 'sett-ingestion'):
    if want not in [h['spec']['scaleTargetRef']['name'] for h in by_kind.get('HorizontalPodAutoscaler', {}).values()]: err(f'k8s: no HPA for {want}')
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

# ---- Kubernetes: schema-aware tools, when installed ----------------------------------------
if have kubectl; then
  if out=$(kubectl kustomize deploy/k8s 2>&1 > "$tmp/k8s.yaml"); then ok "kubectl kustomize deploy/k8s"; else fail "kubectl kustomize: $out"; fi
else
  skip "kubectl kustomize (no kubectl)"
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
missing=""
for f in pnpm-lock.yaml pnpm-workspace.yaml package.json prisma.config.ts prisma/schema.prisma deploy/docker/healthcheck.mjs .dockerignore; do
  [ -e "$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "files the Dockerfile relies on exist"; else fail "missing for the image:$missing"; fi
if docker buildx version > /dev/null 2>&1 && docker info > /dev/null 2>&1; then
  if out=$(docker build --check -f deploy/docker/Dockerfile . 2>&1); then ok "docker build --check"; else fail "docker build --check: $out"; fi
else
  skip "docker build --check (no Docker engine)"
fi

# ---- nginx ----------------------------------------------------------------------------------
nginx_bin="$(command -v nginx || ls /usr/sbin/nginx 2> /dev/null || true)"
if [ -n "$nginx_bin" ] && have node; then
  # Starts its own nginx on a free loopback port and stops it before returning.
  if out=$(node deploy/nginx/route-test.mjs "$nginx_bin" 2>&1); then
    ok "nginx -t and edge routes ($("$nginx_bin" -v 2>&1 | sed 's/.*version: //'); $(echo "$out" | grep -c '^ok') checks)"
  else
    echo "$out" | grep -v '^ok' | sed 's/^/  /'
    fail "nginx edge routes"
  fi
else
  skip "nginx -t and edge routes (nginx or node not installed)"
fi

echo
if [ "$failures" -eq 0 ]; then echo "deploy/validate.sh: all checks that ran passed"; else echo "deploy/validate.sh: $failures failed"; fi
exit $((failures > 0))
