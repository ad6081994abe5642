# The pnpm step of scripts/setup.sh (sourced, so COREPACK_INTEGRITY_KEYS it may export reaches
# the later steps): make `pnpm` on PATH the version package.json pins, or stop with the failing
# command's own output and a hint. Handles a corepack-managed pnpm (corepack's shim on PATH),
# which refuses to download pnpm unless COREPACK_INTEGRITY_KEYS=0 ("No compatible signature
# found in package metadata") or cannot download at all (no network to its servers).

setup_log() { printf 'setup: %s\n' "$*" >&2; }

# Prints the captured output of a failed command, indented, so it stands apart from setup's own.
show_output() { [ -s "$1" ] && sed 's/^/  | /' "$1" >&2; return 0; }

pnpm_is() { [ "$(pnpm -v 2>/dev/null)" = "$1" ]; }

# corepack's pnpm is a link into corepack's own directory (or a script that runs corepack).
pnpm_is_corepack_shim() {
  local bin
  bin=$(command -v pnpm) || return 1
  case "$(readlink -f "$bin")" in *corepack*) return 0 ;; esac
  head -c 512 "$bin" 2>/dev/null | grep -q corepack
}

# npm install -g, as root when the global directory needs it.
npm_install_pnpm() {
  local want=$1 out=$2
  npm install -g "pnpm@$want" > "$out" 2>&1 && return 0
  [ "$(id -u)" = 0 ] && return 1
  command -v sudo > /dev/null || return 1
  sudo -n npm install -g "pnpm@$want" >> "$out" 2>&1
}

ensure_pnpm() {
  local want=$1 out
  pnpm_is "$want" && return 0
  out=$(mktemp)
  if pnpm_is_corepack_shim; then
    setup_log "pnpm on PATH is corepack's shim ($(command -v pnpm)); asking corepack for pnpm@$want"
    if COREPACK_INTEGRITY_KEYS=0 pnpm -v > "$out" 2>&1 && [ "$(tail -1 "$out")" = "$want" ]; then
      # corepack's key check is what failed: keep it off for the rest of the setup and tell why.
      setup_log "corepack gives pnpm only with COREPACK_INTEGRITY_KEYS=0 (its signature check fails here); using that"
      export COREPACK_INTEGRITY_KEYS=0
      rm -f "$out"
      return 0
    fi
    setup_log "corepack could not provide pnpm@$want:"
    show_output "$out"
    setup_log "disabling corepack's pnpm shim (corepack disable pnpm) to install pnpm from the npm registry"
    if ! corepack disable pnpm > "$out" 2>&1; then
      show_output "$out"
    fi
    hash -r
  fi
  setup_log "installing pnpm@$want from the npm registry (npm install -g pnpm@$want)"
  if npm_install_pnpm "$want" "$out" && hash -r && pnpm_is "$want"; then
    rm -f "$out"
    return 0
  fi
  setup_log "could not install pnpm@$want; npm said:"
  show_output "$out"
  if pnpm_is_corepack_shim; then
    setup_log "hint: pnpm on PATH ($(command -v pnpm)) is still corepack's shim: run 'corepack disable pnpm' (as the user owning $(dirname "$(command -v pnpm)")), then 'npm install -g pnpm@$want'; or 'COREPACK_INTEGRITY_KEYS=0 corepack prepare pnpm@$want --activate' where corepack can reach the npm registry"
  else
    setup_log "hint: install it yourself and re-run: 'npm install -g pnpm@$want' (as root, or with an npm prefix you can write: npm config set prefix ~/.local), then check that 'pnpm -v' prints $want"
  fi
  rm -f "$out"
  return 1
}
