#!/usr/bin/env bash
# The servers a sweep beyond one machine talks to, real and on this host, for the cluster tests (pytest -m cluster)
# and for trying a study on a database or a sweep on SLURM by hand:
#
#   sudo bash scripts/services.sh start    # installs what is missing (Debian's packages), starts, prints the addresses
#   sudo bash scripts/services.sh status   # what runs, where
#   sudo bash scripts/services.sh stop     # stops what `start` started, nothing else
#
# Every address a service is given is the loopback address (127.0.0.1): PostgreSQL and MariaDB listen there only; SLURM
# 22.05's daemons have no setting for the address they listen on and bind every interface, but every host and node
# address of the cluster is 127.0.0.1, so no traffic goes elsewhere. The ports lie below Linux's ephemeral range
# (32768-60999), where an outgoing connection of another daemon could hold them. The state lives in
# $SENTENCE_LAB_SERVICES_DIR (default /var/lib/sentence-lab-services).
#
# PostgreSQL (the sweeps' studies): a server of its own (not the system's cluster), port $SENTENCE_LAB_POSTGRES_PORT
# (15432), with the user and database `sweeps` (password `sweeps`): a sweep's storage is
#   postgresql://sweeps:sweeps@127.0.0.1:15432/sweeps
#
# SLURM (the sweeps' jobs): a one-node cluster `sentencelab` of Debian's slurm-wlm: munged, slurmctld and slurmd (node
# `localnode`, NodeAddr 127.0.0.1, this machine's cores and memory, partition `local`), and slurmdbd for `sacct` (what
# submitit reads a job's state with), its database in a MariaDB server of its own (127.0.0.1:13306, socket only for
# root). The configuration is $STATE/slurm/etc/slurm.conf; /etc/slurm/slurm.conf points there unless the machine has
# a SLURM configuration of its own (then export SLURM_CONF, as `start` prints).
#
# Idempotent: `start` with everything running checks it and prints the same.
set -euo pipefail

STATE="${SENTENCE_LAB_SERVICES_DIR:-/var/lib/sentence-lab-services}"
PG_PORT="${SENTENCE_LAB_POSTGRES_PORT:-15432}"
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
    as_postgres "$bin/pg_ctl" -D "$PG_DATA" -l "$STATE/postgres.log" -w -t 60 \
      -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_SOCKETS" start >/dev/null \
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

# ---------------------------------------------------------------------------------------------------------------------
# SLURM: munged, a MariaDB server for slurmdbd, slurmdbd, slurmctld, slurmd
SLURM="$STATE/slurm"
SLURM_ETC="$SLURM/etc"
SLURM_CONF_FILE="$SLURM_ETC/slurm.conf"
SLURM_PARTITION="${SENTENCE_LAB_SLURM_PARTITION:-local}"
SLURM_NODE=localnode
CTLD_PORT="${SENTENCE_LAB_SLURMCTLD_PORT:-16817}"
SLURMD_PORT="${SENTENCE_LAB_SLURMD_PORT:-16818}"
DBD_PORT="${SENTENCE_LAB_SLURMDBD_PORT:-16819}"
DB_PORT="${SENTENCE_LAB_MARIADB_PORT:-13306}"
DB_DATA="$STATE/mariadb"
DB_SOCKET="$STATE/mariadb-socket/mysqld.sock"
MUNGE_SOCKET=/run/munge/munge.socket.2
export SLURM_CONF="$SLURM_CONF_FILE"

install_slurm() {
  local missing=() program
  command -v munged >/dev/null || missing+=(munge)
  command -v slurmctld >/dev/null || missing+=(slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v sbatch >/dev/null || missing+=(slurm-client)
  command -v slurmdbd >/dev/null || missing+=(slurmdbd)
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (apt-get install)"
    apt-get update -qq
    # a container has no init to start them: the packages' own start attempts are declined, this script starts them
    local policy=/usr/sbin/policy-rc.d made_policy=""
    if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; made_policy=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [ -n "$made_policy" ]; then rm -f "$policy"; fi
  fi
  for program in munged slurmctld slurmd sbatch slurmdbd mariadbd; do
    command -v "$program" >/dev/null || fail "$program is missing after installing Debian's SLURM and MariaDB packages"
  done
}

started() { touch "$STATE/$1.started-by-services-sh"; }
was_started() { [ -f "$STATE/$1.started-by-services-sh" ]; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() {  # wait_for <seconds> <what> <command...>: until the command succeeds
  local seconds="$1" what="$2" i
  shift 2
  for ((i = 0; i < seconds * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  fail "$what did not come up within ${seconds}s: see $SLURM/log and $STATE/mariadb.log"
}

munge_answers() { munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; }

start_munge() {
  if munge_answers; then
    say "munged already runs"
    return
  fi
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
      || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- munged --socket="$MUNGE_SOCKET"
  wait_for 20 munged munge_answers
  started munge
}

db() { mariadb --socket="$DB_SOCKET" -u root "$@"; }

start_mariadb() {
  mkdir -p "$(dirname "$DB_SOCKET")"
  chown mysql:mysql "$(dirname "$DB_SOCKET")"
  if [ ! -d "$DB_DATA/mysql" ]; then
    mkdir -p "$DB_DATA" && chown mysql:mysql "$DB_DATA"
    mariadb-install-db --user=mysql --datadir="$DB_DATA" --auth-root-authentication-method=socket \
      --skip-test-db >/dev/null 2>&1 || fail "mariadb-install-db failed for $DB_DATA"
  fi
  if db -e "SELECT 1" >/dev/null 2>&1; then
    say "MariaDB (slurmdbd's) already runs"
  else
    touch "$STATE/mariadb.log" && chown mysql:mysql "$STATE/mariadb.log"
    setsid mariadbd --user=mysql --datadir="$DB_DATA" --socket="$DB_SOCKET" --port="$DB_PORT" \
      --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$(dirname "$DB_SOCKET")/mariadb.pid" \
      --log-error="$STATE/mariadb.log" </dev/null >/dev/null 2>&1 &
    wait_for 60 MariaDB db -e "SELECT 1"
    started mariadb
  fi
  db -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
         CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

write_slurm_conf() {
  # this machine's boards, sockets, cores, threads and memory as slurmd finds them (a node may not claim more)
  local found hardware memory
  found="$(slurmd -C | head -n 1)"
  hardware="$(grep -oE '(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=[0-9]+' <<<"$found" | tr '\n' ' ')"
  memory="$(grep -oE 'RealMemory=[0-9]+' <<<"$found" | cut -d= -f2)"
  mkdir -p "$SLURM_ETC" "$SLURM/log" "$SLURM/run" "$SLURM/ctld" "$SLURM/d"
  chown slurm:slurm "$SLURM/log" "$SLURM/run" "$SLURM/ctld"
  {
    echo "# written by sentence-lab's scripts/services.sh: a one-node cluster on the loopback address"
    echo "ClusterName=sentencelab"
    echo "SlurmctldHost=localhost(127.0.0.1)"
    echo "SlurmctldPort=$CTLD_PORT"
    echo "SlurmdPort=$SLURMD_PORT"
    echo "SlurmUser=slurm"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    # a requeued job may start again after this many seconds (SLURM's default, 120, suits a big cluster's epilogs)
    echo "AuthInfo=cred_expire=10"
    echo "StateSaveLocation=$SLURM/ctld"
    echo "SlurmdSpoolDir=$SLURM/d"
    echo "SlurmctldPidFile=$SLURM/run/slurmctld.pid"
    echo "SlurmdPidFile=$SLURM/run/slurmd.pid"
    echo "SlurmctldLogFile=$SLURM/log/slurmctld.log"
    echo "SlurmdLogFile=$SLURM/log/slurmd.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/slurmdbd"
    echo "AccountingStorageHost=127.0.0.1"
    echo "AccountingStoragePort=$DBD_PORT"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core_Memory"
    echo "ReturnToService=2"
    echo "EnforcePartLimits=ALL"
    echo "MinJobAge=600"
    echo "KillWait=10"
    echo "DefMemPerCPU=1024"
    echo "NodeName=$SLURM_NODE NodeAddr=127.0.0.1 ${hardware}RealMemory=$memory State=UNKNOWN"
    echo "PartitionName=$SLURM_PARTITION Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP"
  } >"$SLURM_CONF_FILE"
  {
    echo "# written by sentence-lab's scripts/services.sh"
    echo "AuthType=auth/munge"
    echo "DbdAddr=127.0.0.1"
    echo "DbdHost=localhost"
    echo "DbdPort=$DBD_PORT"
    echo "SlurmUser=slurm"
    echo "LogFile=$SLURM/log/slurmdbd.log"
    echo "PidFile=$SLURM/run/slurmdbd.pid"
    echo "StorageType=accounting_storage/mysql"
    echo "StorageHost=127.0.0.1"
    echo "StoragePort=$DB_PORT"
    echo "StorageUser=slurm"
    echo "StoragePass=slurm"
    echo "StorageLoc=slurm_acct_db"
  } >"$SLURM_ETC/slurmdbd.conf"
  chown slurm:slurm "$SLURM_ETC/slurmdbd.conf" && chmod 600 "$SLURM_ETC/slurmdbd.conf"
  # the commands find this cluster without SLURM_CONF, unless the machine has a SLURM of its own
  mkdir -p /etc/slurm
  if [ ! -e /etc/slurm/slurm.conf ] || [ "$(readlink /etc/slurm/slurm.conf)" = "$SLURM_CONF_FILE" ]; then
    ln -sfn "$SLURM_CONF_FILE" /etc/slurm/slurm.conf
  fi
}

start_slurmd() {  # again while its port is still held by the slurmd stopped just before (a restart)
  local i
  for ((i = 0; i < 30; i++)); do
    slurmd -N "$SLURM_NODE"
    sleep 1
    if pid_alive "$SLURM/run/slurmd.pid"; then started slurmd; return 0; fi
  done
  fail "slurmd did not stay up: see $SLURM/log/slurmd.log"
}

node_ready() { sinfo -h -n "$SLURM_NODE" -o %T | grep -qE '^(idle|mixed|allocated)'; }

start_slurm() {
  install_slurm
  start_munge
  start_mariadb
  write_slurm_conf
  if pid_alive "$SLURM/run/slurmdbd.pid"; then
    say "slurmdbd already runs"
  else
    slurmdbd
    wait_for 30 slurmdbd sacctmgr -n list cluster
    started slurmdbd
  fi
  sacctmgr -i -Q add cluster sentencelab >/dev/null 2>&1 || true
  if pid_alive "$SLURM/run/slurmctld.pid"; then
    say "slurmctld already runs"
  else
    slurmctld
    wait_for 30 slurmctld scontrol ping
    started slurmctld
  fi
  if pid_alive "$SLURM/run/slurmd.pid"; then
    say "slurmd already runs"
  else
    start_slurmd
  fi
  wait_for 60 "the node $SLURM_NODE" node_ready
  local where="SLURM_CONF=$SLURM_CONF_FILE"
  if [ "$(readlink /etc/slurm/slurm.conf)" = "$SLURM_CONF_FILE" ]; then where="/etc/slurm/slurm.conf"; fi
  say "SLURM $(sinfo -V | awk '{print $2}'): cluster sentencelab, partition $SLURM_PARTITION ($(sinfo -h -p "$SLURM_PARTITION" -o '%c CPUs, %m MB')) on node $SLURM_NODE (127.0.0.1), slurmctld 127.0.0.1:$CTLD_PORT, slurmdbd 127.0.0.1:$DBD_PORT; its config: $where"
}

stop_pidfile() {  # stop_pidfile <name> <pid file>: SIGTERM to what this script started, then wait for it to end
  local pid i
  if was_started "$1" && pid_alive "$2"; then
    pid="$(cat "$2")"
    kill "$pid"
    for ((i = 0; i < 120; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    say "$1 stopped"
  fi
  rm -f "$STATE/$1.started-by-services-sh"
}

stop_slurm() {
  stop_pidfile slurmd "$SLURM/run/slurmd.pid"
  stop_pidfile slurmctld "$SLURM/run/slurmctld.pid"
  stop_pidfile slurmdbd "$SLURM/run/slurmdbd.pid"
  stop_pidfile mariadb "$(dirname "$DB_SOCKET")/mariadb.pid"
  stop_pidfile munge /run/munge/munged.pid
}

status_slurm() {
  if scontrol ping >/dev/null 2>&1; then
    say "SLURM runs: $(sinfo -h -o 'partition %P: %D node(s) %T, %c CPUs, %m MB' | tr '\n' ' ')"
  else
    say "SLURM: not running (sudo bash scripts/services.sh start)"
  fi
}

case "${1:-}" in
  start) need_root start; start_postgres; start_slurm ;;
  stop) need_root stop; stop_slurm; stop_postgres ;;
  status) status_postgres; status_slurm ;;
  *) fail "usage: bash scripts/services.sh start|stop|status" ;;
esac
