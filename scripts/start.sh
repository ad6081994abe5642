#!/usr/bin/env bash
# `pnpm start` / `npm start`: set up what is missing, then run the whole stack in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
# The servers this set-up starts belong to this run: start.ts stops them when it stops.
export SETT_STARTED_NOTE="$PWD/.sett/started-by-setup.$$"
rm -f "$SETT_STARTED_NOTE"
bash scripts/setup.sh
exec node --import tsx scripts/start.ts "$@"
