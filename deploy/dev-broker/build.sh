#!/usr/bin/env bash
# Builds the Kafka development broker (sett-dev-broker.c over librdkafka's mock cluster) into
# deploy/dev-broker/bin/. Idempotent: installs librdkafka-dev only when its header is missing
# (and only as root), and recompiles only when the source is newer than the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/sett-dev-broker.c"
bin="$here/bin/sett-dev-broker"
header=/usr/include/librdkafka/rdkafka_mock.h

if [[ ! -f "$header" ]] || ! command -v gcc >/dev/null || ! command -v pkg-config >/dev/null; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "build.sh: need librdkafka-dev, pkg-config and gcc; run as root or: sudo apt-get install -y librdkafka-dev pkg-config gcc" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends librdkafka-dev pkg-config gcc libc6-dev
fi

if [[ -x "$bin" && "$bin" -nt "$src" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$here/bin"
# Build to a temporary name and rename, so a concurrent caller never runs a half-written binary.
tmp="$(mktemp "$here/bin/.sett-dev-broker.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
# shellcheck disable=SC2046 # pkg-config output is meant to split into flags
gcc -O2 -Wall -Wextra -std=gnu11 -o "$tmp" "$src" $(pkg-config --cflags --libs rdkafka)
mv -f "$tmp" "$bin"
trap - EXIT
echo "$bin"
