#!/usr/bin/env bash
# The servers a sweep beyond one machine talks to, real and on this host, for the cluster tests (pytest -m cluster)
# and for trying a study on a database by hand:
#
#   sudo bash scripts/services.sh start    # installs what is missing (Debian's packages), starts, prints the addresses
#   sudo bash scripts/services.sh status   # what runs, where
#   sudo bash scripts/services.sh stop     # stops what `start` started, nothing else
#
# PostgreSQL: a server of its own (not the system's cluster), its data in $SENTENCE_LAB_SERVICES_DIR/postgres
# (default /var/lib/sentence-lab-services), listening on 127.0.0.1 only, port $SENTENCE_LAB_POSTGRES_PORT (55432),
# with the user and database `sweeps` (password `sweeps`): a sweep's storage is
#   postgresql://sweeps:sweeps@127.0.0.1:55432/sweeps
# Idempotent: `start` on a running server checks it and prints the same. Nothing listens beyond the loopback address.
set -euo pipefail

STATE="${SENTENCE_LAB_SERVICES_DIR:-/var/lib/sentence-lab-services}"
PG_PORT="${SENTENCE_LAB_POSTGRES_PORT:-55432}"
PG_DATA="$STATE/postgres"
PG_SOCKETS="$STATE/postgres-sockets"
PG_STARTED="$STATE/postgres.started-by-services-sh"
PG_URL="postgresql://sweeps:sweeps@127.0.0.1:$PG_PORT/sweeps"

say() { echo "services.sh: $*"; }
fail() { echo "services.sh: $*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || fail "run as root (sudo bash scripts/services.sh $1): it installs Debian's packages and starts servers as their own users"
}

pg_bin() {  # the newest installed PostgreSQL's programs
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

as_postgres() { runuser -u postgres -- "$@"; }

install_postgres() {
  if [ -z "$(pg_bin)" ]; then
    say "installing PostgreSQL (apt-get install postgresql)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  [ -n "$(pg_bin)" ] || fail "PostgreSQL's programs are not under /usr/lib/postgresql/*/bin after installing postgresql"
}

pg_running() { [ -n "$(pg_bin)" ] && [ -d "$PG_DATA" ] && as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; }

start_postgres() {
  install_postgres
  local bin
  bin="$(pg_bin)"
  mkdir -p "$STATE" "$PG_SOCKETS"
  chown postgres:postgres "$PG_SOCKETS"
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    mkdir -p "$PG_DATA"
    chown postgres:postgres "$PG_DATA"
    chmod 700 "$PG_DATA"
    as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C --auth-local=peer \
      --auth-host=scram-sha-256 >/dev/null
    # this server's own settings: the loopback address only, its own port and socket folder
    cat >>"$PG_DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCKETS'
max_connections = 200
EOF
    echo "host all all 127.0.0.1/32 scram-sha-256" >"$PG_DATA/pg_hba.conf"
    echo "local all postgres peer" >>"$PG_DATA/pg_hba.conf"
    chown postgres:postgres "$PG_DATA/pg_hba.conf"
  fi
  if pg_running; then
    say "PostgreSQL already runs ($PG_DATA)"
  else
    touch "$STATE/postgres.log"
    chown postgres:postgres "$STATE/postgres.log"
    as_postgres "$bin/pg_ctl" -D "$PG_DATA" -l "$STATE/postgres.log" -w -t 60 start >/dev/null \
      || fail "PostgreSQL did not start: see $STATE/postgres.log"
    touch "$PG_STARTED"
  fi
  local psql=(runuser -u postgres -- "$bin/psql" -h "$PG_SOCKETS" -p "$PG_PORT" -U postgres -d postgres -qtA)
  if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'sweeps'")" != 1 ]; then
    "${psql[@]}" -c "CREATE ROLE sweeps LOGIN PASSWORD 'sweeps'" >/dev/null
  fi
  if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'sweeps'")" != 1 ]; then
    "${psql[@]}" -c "CREATE DATABASE sweeps OWNER sweeps" >/dev/null
  fi
  say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') listens on 127.0.0.1:$PG_PORT; a sweep's storage: $PG_URL"
}

stop_postgres() {
  if [ -f "$PG_STARTED" ] && pg_running; then
    as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
    say "PostgreSQL stopped"
  else
    say "PostgreSQL: nothing this script started runs"
  fi
  rm -f "$PG_STARTED"
}

status_postgres() {
  if pg_running; then
    say "PostgreSQL runs on 127.0.0.1:$PG_PORT ($PG_DATA); a sweep's storage: $PG_URL"
  else
    say "PostgreSQL: not running (sudo bash scripts/services.sh start)"
  fi
}

case "${1:-}" in
  start) need_root start; start_postgres ;;
  stop) need_root stop; stop_postgres ;;
  status) status_postgres ;;
  *) fail "usage: bash scripts/services.sh start|stop|status" ;;
esac
