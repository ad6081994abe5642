#!/usr/bin/env bash
# Brings a machine from nothing to ready: pnpm, dependencies, Postgres, Redis, the Kafka
# development broker, the database and its migrations. Idempotent and quiet when there is
# nothing to do; used by `pnpm start` / `npm start` and by `pnpm test` / `npm test`.
#
# It reuses whatever DATABASE_URL, REDIS_URL and KAFKA_BROKERS point at. When those are local
# and not answering, it starts (and, as root on Debian, installs) Postgres and Redis, and notes
# them in the file SETT_STARTED_NOTE names, if any: `pnpm start` passes one so that it stops
# them again on Ctrl-C. Without it (the test command) they are left running, because a stack
# that a test starts and stops must never take the shared servers down with it.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }
apt_updated=0
note_started() { if [ -n "${SETT_STARTED_NOTE:-}" ]; then mkdir -p "$(dirname "$SETT_STARTED_NOTE")" && echo "$1" >> "$SETT_STARTED_NOTE"; fi; }
# Quiet when it works; when apt-get fails, its output is shown (a missing package source, a lock).
apt_install() {
  local out
  out=$(mktemp)
  if { [ "$apt_updated" = 1 ] || { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq && apt_updated=1; }; } > "$out" 2>&1 \
    && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >> "$out" 2>&1; then
    rm -f "$out"
    return 0
  fi
  log "apt-get install $* failed:"
  sed 's/^/  | /' "$out" >&2
  log "hint: install $* yourself (as root: apt-get update && apt-get install $*), then re-run"
  rm -f "$out"
  return 1
}

export DATABASE_URL="${DATABASE_URL:-postgresql://root@127.0.0.1:5432/sett}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

# --- pnpm (the version pinned in package.json's packageManager) -------------------------------
# shellcheck source=scripts/setup-pnpm.sh
source scripts/setup-pnpm.sh
ensure_pnpm "$(node -p "require('./package.json').packageManager.split('@')[1]")" || exit 1

# --- librdkafka (node-rdkafka, Sett's Kafka producer, compiles against it at install) ----------
if [ ! -f /usr/include/librdkafka/rdkafka.h ] || ! command -v g++ >/dev/null || ! command -v make >/dev/null; then
  log "installing librdkafka-dev and a compiler from Debian's packages (node-rdkafka, the development broker)"
  apt_install librdkafka-dev pkg-config gcc g++ make libc6-dev \
    || log "could not install librdkafka-dev: node-rdkafka will not build and Kafka falls back to kafkajs (slower)"
fi

# --- dependencies ------------------------------------------------------------------------------
stamp=node_modules/.sett-install-stamp
if [ ! -f "$stamp" ] || [ pnpm-lock.yaml -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
  log "installing dependencies (pnpm install --frozen-lockfile)"
  CI=true pnpm install --frozen-lockfile --reporter=silent
  touch "$stamp"
elif [ ! -d packages/db/src/generated/prisma ]; then
  node scripts/prisma-generate.js
fi
# node-rdkafka is optional: pnpm carries on when its build fails (no librdkafka at the time, say).
# Build it again once what it needs is there; if it still cannot load, say so: the services then
# produce with kafkajs and log that they fell back.
rdkafka_loads() { (cd packages/kafka && node -e "require('node-rdkafka')" >/dev/null 2>&1); }
if ! rdkafka_loads && [ -f /usr/include/librdkafka/rdkafka.h ]; then
  log "building node-rdkafka against the system librdkafka"
  pnpm rebuild node-rdkafka --reporter=silent >/dev/null 2>&1 || true
fi
rdkafka_loads || log "node-rdkafka is not built: capture and ingestion will produce with kafkajs (see docs/kafka.md)"

# --- Postgres and Redis ------------------------------------------------------------------------
hostport() { node -e 'const u=new URL(process.argv[1]);console.log(u.hostname+" "+(u.port||process.argv[2]))' "$1" "$2"; }
reachable() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
is_local() { [ "$1" = 127.0.0.1 ] || [ "$1" = localhost ] || [ "$1" = ::1 ]; }
wait_for() { for _ in $(seq 1 60); do reachable "$1" "$2" && return 0; sleep 0.5; done; return 1; }

read -r pg_host pg_port < <(hostport "$DATABASE_URL" 5432)
if ! reachable "$pg_host" "$pg_port"; then
  is_local "$pg_host" || { log "Postgres at $pg_host:$pg_port is not reachable"; exit 1; }
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    log "installing PostgreSQL from Debian's packages"
    apt_install postgresql
  fi
  ver=$(ls /etc/postgresql | sort -n | tail -1)
  # Local development only: let local TCP clients in without a password, as the dev stack expects.
  hba=/etc/postgresql/$ver/main/pg_hba.conf
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba" 2>/dev/null; then
    as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba" || true
  fi
  log "starting PostgreSQL $ver"
  as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start 2>/dev/null || as_root pg_ctlcluster "$ver" main start || true
  wait_for "$pg_host" "$pg_port" || { log "Postgres did not come up on $pg_host:$pg_port"; exit 1; }
  note_started "postgres $ver"
  pg_user=$(node -e 'console.log(decodeURIComponent(new URL(process.argv[1]).username)||"postgres")' "$DATABASE_URL")
  as_root su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='$pg_user'\" | grep -q 1 || psql -qc 'CREATE ROLE \"$pg_user\" SUPERUSER LOGIN'" || true
fi

read -r redis_host redis_port < <(hostport "$REDIS_URL" 6379)
if ! reachable "$redis_host" "$redis_port"; then
  is_local "$redis_host" || { log "Redis at $redis_host:$redis_port is not reachable"; exit 1; }
  command -v redis-server >/dev/null || { log "installing Redis from Debian's packages"; apt_install redis-server; }
  log "starting Redis on $redis_port"
  mkdir -p .sett
  redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$PWD/.sett" --logfile "$PWD/.sett/redis.log"
  wait_for "$redis_host" "$redis_port" || { log "Redis did not come up"; exit 1; }
  note_started "redis $redis_port"
fi

# --- Chromium (driven by the SDK end-to-end tests, packages/sdk-e2e; never downloaded by them) --
if ! command -v chromium >/dev/null; then
  log "installing Chromium from Debian's packages (browser SDK tests)"
  apt_install chromium || log "could not install chromium; the browser SDK tests (packages/sdk-e2e) will fail"
fi

# --- promtool (the alert-rule tests in deploy/test run the shipped rules through it) -----------
if ! command -v promtool >/dev/null; then
  log "installing promtool from Debian's packages (prometheus)"
  apt_install --no-install-recommends prometheus || log "could not install prometheus; the alert-rule tests (deploy/test) will fail"
fi

# --- Kafka development broker (only when no real Kafka is configured) -------------------------
if [ -z "${KAFKA_BROKERS:-}" ]; then
  bash deploy/dev-broker/build.sh >&2
fi

# --- database and migrations -------------------------------------------------------------------
if [ "${SETT_SKIP_MIGRATE:-}" != 1 ]; then
  node_modules/.bin/tsx scripts/migrate.ts
fi
