#!/usr/bin/env bash
# `pnpm start` / `npm start`: set up what is missing, then run the whole stack in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node --import tsx scripts/start.ts "$@"
