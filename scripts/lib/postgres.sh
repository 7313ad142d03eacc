# Sourced by scripts/test.sh and scripts/bench-signin.sh: starts a throwaway PostgreSQL 15 cluster on
# 127.0.0.1 (a free port, trust authentication, data in a temporary directory), exports
# COUNTERSIGN_TEST_POSTGRES_URL, and stops and deletes it when the calling shell exits.
# initdb refuses to run as root, so the cluster belongs to the postgres user when we are root.
PGBIN=/usr/lib/postgresql/15/bin
pgdir=$(mktemp -d /tmp/countersign-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$pgdir"; as_pg=(runuser -u postgres --); fi
pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$PGBIN/initdb" -D "$pgdir/data" -A trust -U postgres >/dev/null
# Not marked as the test run's (scripts/lib/reap.sh): the cluster outlives each phase and is stopped by stop_pg.
"${as_pg[@]}" env -u COUNTERSIGN_TEST_RUN "$PGBIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
  -o "-h 127.0.0.1 -p $pgport -k $pgdir ${PG_EXTRA_OPTIONS:-} -c max_connections=300" start >/dev/null
stop_pg() { "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
export COUNTERSIGN_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pgport/postgres"
# The caller's EXIT trap stops the cluster; a signal must reach it too (bash skips EXIT traps on an
# untrapped SIGTERM or SIGINT), or an interrupted run leaves a postgres behind.
trap 'exit 130' INT TERM HUP
