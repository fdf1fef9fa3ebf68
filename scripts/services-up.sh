#!/usr/bin/env bash
# Brings up the real engines the integration and contract tests use: PostgreSQL on 127.0.0.1:5432 (database
# estate_test) and a single-node KRaft Kafka broker on 127.0.0.1:9092. Idempotent: whatever already runs is left alone.
# Quiet unless something fails; progress goes to stderr, the environment to use goes to stdout at the end.
# What this script started is recorded in .cache/services-started so services-down.sh stops only that.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
KAFKA_DIR="$CACHE/kafka"
LIBS="$KAFKA_DIR/libs"
STARTED="$CACHE/services-started"
PG_HOST=127.0.0.1
PG_PORT=5432
PG_DB=estate_test
KAFKA_HOST=127.0.0.1
KAFKA_PORT=9092
WAIT_SECONDS="${SERVICES_WAIT_SECONDS:-60}"

say() { echo "services-up: $*" >&2; }
die() { echo "services-up: ERROR: $*" >&2; exit 1; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
mark_started() { mkdir -p "$CACHE"; grep -qx "$1" "$STARTED" 2>/dev/null || echo "$1" >>"$STARTED"; }

# A fresh machine has nothing installed by hand; install what this script needs when we are allowed to.
need_command() {
  local cmd="$1" pkg="$2"
  command -v "$cmd" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $pkg (for $cmd)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg") >/dev/null 2>&1 \
      || die "could not install $pkg"
  else
    die "$cmd not found; install $pkg"
  fi
}

# Two `up`s at once (parallel CI steps, two shells) would both start a broker on the same data directory.
mkdir -p "$CACHE"
exec 9>"$CACHE/services.lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 300 9 || die "another services-up has held $CACHE/services.lock for 5 minutes"
fi

# ───────────────────────────── PostgreSQL ─────────────────────────────

need_command psql postgresql-client
need_command pg_isready postgresql-client

if ! pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; then
  say "starting PostgreSQL"
  command -v pg_ctlcluster >/dev/null 2>&1 || die "PostgreSQL is down and pg_ctlcluster is missing (apt-get install postgresql)"
  PG_VERSION="$(ls /etc/postgresql | sort -V | tail -n1)"
  [ -n "$PG_VERSION" ] || die "no cluster under /etc/postgresql"
  pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" main start >/dev/null 2>&1 9>&- \
    || die "pg_ctlcluster $PG_VERSION main start failed"
  mark_started "postgres $PG_VERSION"
  for _ in $(seq 1 "$WAIT_SECONDS"); do pg_isready -q -h "$PG_HOST" -p "$PG_PORT" && break; sleep 1; done
  pg_isready -q -h "$PG_HOST" -p "$PG_PORT" || die "PostgreSQL did not accept connections within ${WAIT_SECONDS}s"
fi

# Trust auth: the role to use is whichever one the server lets in.
PG_USER=""
for candidate in postgres root "$(id -un)"; do
  if psql -h "$PG_HOST" -p "$PG_PORT" -U "$candidate" -d postgres -XAtqc 'select 1' >/dev/null 2>&1; then
    PG_USER="$candidate"; break
  fi
done
[ -n "$PG_USER" ] || die "no role (postgres, root, $(id -un)) can connect to $PG_HOST:$PG_PORT without a password"

if [ "$(psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -XAtqc "select 1 from pg_database where datname = '$PG_DB'")" != 1 ]; then
  say "creating database $PG_DB"
  # Two concurrent `up`s may both see it missing; the loser's "already exists" is fine.
  psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -XAtqc "create database $PG_DB" >/dev/null 2>&1 \
    || [ "$(psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -XAtqc "select 1 from pg_database where datname = '$PG_DB'")" = 1 ] \
    || die "could not create database $PG_DB"
fi

# ───────────────────────────── Kafka ─────────────────────────────

kafka_ready() { node "$ROOT/scripts/kafka/wait-ready.mjs" "$KAFKA_HOST:$KAFKA_PORT" "$1" 9>&-; }

# A pid file can outlive its process and the pid be reused: it counts only if that process is our broker.
pid_alive() {
  [ -f "$KAFKA_DIR/kafka.pid" ] && { tr '\0' ' ' <"/proc/$(cat "$KAFKA_DIR/kafka.pid")/cmdline"; } 2>/dev/null | grep -q 'kafka\.Kafka'
}

# The jars are fetched even when a broker already runs: the fault tests start private brokers from them.
fetch_kafka_jars() {
  if ! compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null; then
    need_command mvn maven
    say "downloading Kafka jars from Maven Central into .cache/kafka/libs"
    rm -rf "$LIBS.partial"
    # The plugin is named in full: Maven 3.8's short `dependency:` prefix resolves an ancient plugin version.
    mkdir -p "$KAFKA_DIR"
    if ! mvn -q -B -Dstyle.color=never -f "$ROOT/scripts/kafka/pom.xml" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$LIBS.partial" >"$KAFKA_DIR/maven.log" 2>&1 9>&-; then
      cat "$KAFKA_DIR/maven.log" >&2
      die "Maven could not fetch the Kafka jars"
    fi
    # Rename only when complete, so an interrupted download is never mistaken for a cache.
    rm -rf "$LIBS" && mv "$LIBS.partial" "$LIBS"
  fi
}
fetch_kafka_jars

if port_open "$KAFKA_HOST" "$KAFKA_PORT"; then
  kafka_ready "$WAIT_SECONDS" || die "something answers on $KAFKA_HOST:$KAFKA_PORT but it is not a working Kafka broker"
elif pid_alive; then
  # Our broker from an earlier `up` is still starting: wait for it rather than start a second one.
  say "waiting for the Kafka broker already starting (pid $(cat "$KAFKA_DIR/kafka.pid"))"
  kafka_ready "$WAIT_SECONDS" || die "Kafka did not become ready; see $KAFKA_DIR/logs/server.log"
else
  need_command java openjdk-17-jre-headless
  say "starting Kafka on $KAFKA_HOST:$KAFKA_PORT"
  rm -rf "$KAFKA_DIR/data" "$KAFKA_DIR/logs"
  mkdir -p "$KAFKA_DIR/data" "$KAFKA_DIR/logs"
  sed "s#@DATA_DIR@#$KAFKA_DIR/data#" "$ROOT/scripts/kafka/server.properties" >"$KAFKA_DIR/server.properties"

  JAVA_OPTS=(-Xms512m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$ROOT/scripts/kafka/log4j.properties" "-Dkafka.logs.dir=$KAFKA_DIR/logs")
  CLUSTER_ID="$(java "${JAVA_OPTS[@]}" -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>>"$KAFKA_DIR/logs/storage.log" 9>&-)" \
    || die "StorageTool random-uuid failed; see $KAFKA_DIR/logs/storage.log"
  java "${JAVA_OPTS[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format --cluster-id="$CLUSTER_ID" \
    -c "$KAFKA_DIR/server.properties" >>"$KAFKA_DIR/logs/storage.log" 2>&1 9>&- \
    || die "StorageTool format failed; see $KAFKA_DIR/logs/storage.log"

  # setsid + nohup: the broker must outlive `npm run`. 9>&-: it must not inherit (and hold forever) our lock.
  setsid nohup java "${JAVA_OPTS[@]}" -cp "$LIBS/*" kafka.Kafka "$KAFKA_DIR/server.properties" \
    >"$KAFKA_DIR/logs/stdout.log" 2>&1 </dev/null 9>&- &
  echo $! >"$KAFKA_DIR/kafka.pid"
  mark_started kafka

  # A broker that never became ready is stopped, so the next `up` starts clean instead of trusting it.
  stop_failed_start() {
    kill -TERM "$(cat "$KAFKA_DIR/kafka.pid")" 2>/dev/null || true
    rm -f "$KAFKA_DIR/kafka.pid"
  }
  deadline=$((SECONDS + WAIT_SECONDS))
  until port_open "$KAFKA_HOST" "$KAFKA_PORT"; do
    pid_alive || { rm -f "$KAFKA_DIR/kafka.pid"; die "Kafka exited during start-up; see $KAFKA_DIR/logs/stdout.log and server.log"; }
    [ "$SECONDS" -lt "$deadline" ] \
      || { stop_failed_start; die "Kafka did not listen on $KAFKA_PORT within ${WAIT_SECONDS}s; see $KAFKA_DIR/logs/server.log"; }
    sleep 0.5
  done
  kafka_ready "$((deadline - SECONDS > 5 ? deadline - SECONDS : 5))" \
    || { stop_failed_start; die "Kafka listens but does not answer metadata requests; see $KAFKA_DIR/logs/server.log"; }
fi

echo "ESTATE_TEST_PG=postgres://$PG_USER@$PG_HOST:$PG_PORT/$PG_DB"
echo "ESTATE_TEST_KAFKA=$KAFKA_HOST:$KAFKA_PORT"
