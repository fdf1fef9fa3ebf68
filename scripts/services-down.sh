#!/usr/bin/env bash
# Stops only what services-up.sh started: the Kafka broker named by .cache/kafka/kafka.pid, and PostgreSQL only when
# .cache/services-started says `up` started it (a PostgreSQL that was already running belongs to the machine).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
PID_FILE="$CACHE/kafka/kafka.pid"
STARTED="$CACHE/services-started"

say() { echo "services-down: $*" >&2; }

if [ -f "$PID_FILE" ]; then
  pid="$(cat "$PID_FILE")"
  # Never signal a stranger that inherited a recycled pid.
  if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q 'kafka\.Kafka'; then
    say "stopping Kafka (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      say "Kafka did not stop within 30s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$PID_FILE"
fi

if [ -f "$STARTED" ]; then
  while read -r what version; do
    if [ "$what" = postgres ] && [ -n "${version:-}" ]; then
      say "stopping PostgreSQL $version (started by services-up)"
      pg_ctlcluster --skip-systemctl-redirect "$version" main stop >/dev/null 2>&1 \
        || say "pg_ctlcluster $version main stop failed"
    fi
  done <"$STARTED"
  rm -f "$STARTED"
fi
