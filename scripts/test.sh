#!/usr/bin/env bash
# Sets up and runs every test: the unit, vector and adversarial tests of CountersignCrypto, the CLI tests
# (OpenSSL, oathtool, Python's `cryptography`), and the server's integration suite on SQLite files and on
# a throwaway PostgreSQL 15 cluster on 127.0.0.1 that this script starts and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools the tests talk to. Installed only when missing, so the command is idempotent.
need_apt=()
command -v openssl >/dev/null || need_apt+=(openssl)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
command -v oathtool >/dev/null || need_apt+=(oathtool)
[ -f /usr/include/argon2.h ] || need_apt+=(libargon2-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v argon2 >/dev/null || need_apt+=(argon2)
PGBIN=/usr/lib/postgresql/15/bin
[ -x "$PGBIN/initdb" ] || need_apt+=(postgresql-15)
command -v psql >/dev/null || need_apt+=(postgresql-client-15)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install -q cryptography
python3 -c 'import altcha' 2>/dev/null || python3 -m pip install -q altcha==2.3.0
python3 -c 'import openapi_spec_validator' 2>/dev/null || python3 -m pip install -q openapi-spec-validator==0.9.0

# The OpenAPI document must be valid OpenAPI 3.1.
python3 -m openapi_spec_validator docs/openapi.yaml

# PostgreSQL: initdb refuses to run as root, so the cluster belongs to the postgres user when we are root.
pgdir=$(mktemp -d /tmp/countersign-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$pgdir"; as_pg=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$PGBIN/initdb" -D "$pgdir/data" -A trust -U postgres >/dev/null
"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
  -o "-h 127.0.0.1 -p $port -k $pgdir -c fsync=off -c max_connections=300" start >/dev/null
stop_pg() { "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
trap stop_pg EXIT
export COUNTERSIGN_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
export COUNTERSIGN_REQUIRE_POSTGRES=1

swift build --build-tests
swift test --skip-build --parallel
