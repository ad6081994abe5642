#!/usr/bin/env bash
# The one test command (README Quick start, .ci/run): set the machine up, then run every
# unit and integration test against real Postgres, Redis and the Kafka development broker.
set -euo pipefail
cd "$(dirname "$0")/.."
SETT_SKIP_MIGRATE=1 bash scripts/setup.sh
export NODE_ENV=test
exec node_modules/.bin/jest --maxWorkers=2 "$@"
