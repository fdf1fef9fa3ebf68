#!/usr/bin/env bash
# Runs .ci/run N times in a row, each time in a fresh clone of the committed HEAD, and says how many passed: the way
# to show that CI is green every time, not once. With --loaded, a second fresh clone runs `npm test` at the same time
# as each CI run, so the machine is as loaded as a busy CI host.
#
#   bash scripts/ci-repeat.sh [N=5] [--loaded]
#
# Logs: .cache/ci-repeat/run-<i>.log; with --loaded, loaded-run-<i>.log and load-<i>.log. Exit 0 only when every run passed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N=5
LOADED=0
for arg in "$@"; do
  case "$arg" in
    --loaded) LOADED=1 ;;
    ''|*[!0-9]*) echo "usage: bash scripts/ci-repeat.sh [N] [--loaded]" >&2; exit 2 ;;
    *) N="$arg" ;;
  esac
done

LOGS="$ROOT/.cache/ci-repeat"
mkdir -p "$LOGS"
HEAD_SHA="$(git -C "$ROOT" rev-parse HEAD)"
# A loaded series keeps its own logs: it must not overwrite the plain series' run-<i>.log.
RUN_LOG="run"
[ "$LOADED" = 1 ] && RUN_LOG="loaded-run"
passed=0
for i in $(seq 1 "$N"); do
  work="$(mktemp -d /tmp/estate-ci-XXXXXX)"
  chmod 755 "$work" # readable by other users, like a usual checkout (a test runs the server as nobody)
  git clone -q "$ROOT" "$work/estate" && git -C "$work/estate" checkout -q "$HEAD_SHA"
  load_pid=""
  if [ "$LOADED" = 1 ]; then
    git clone -q "$ROOT" "$work/load" && git -C "$work/load" checkout -q "$HEAD_SHA"
    (cd "$work/load" && npm ci --no-audit --no-fund && npm test) >"$LOGS/load-$i.log" 2>&1 &
    load_pid=$!
  fi
  started=$SECONDS
  (cd "$work/estate" && env -u ESTATE_STORE CI=true bash .ci/run) >"$LOGS/$RUN_LOG-$i.log" 2>&1
  rc=$?
  [ -n "$load_pid" ] && wait "$load_pid"
  # vitest colours its summary: strip the escapes before looking for it.
  summary="$(sed 's/\x1b\[[0-9;]*m//g' "$LOGS/$RUN_LOG-$i.log" | grep -E '^ +Tests +[0-9]' | tail -n1 | sed 's/^ *//')"
  printf 'run %d/%d: exit %d in %d s  %s\n' "$i" "$N" "$rc" "$((SECONDS - started))" "$summary"
  [ "$rc" = 0 ] && passed=$((passed + 1))
  rm -rf "$work"
done
echo "ci-repeat: $passed of $N runs of .ci/run passed at $HEAD_SHA$([ "$LOADED" = 1 ] && echo ' (loaded by a parallel npm test)')"
[ "$passed" = "$N" ]
