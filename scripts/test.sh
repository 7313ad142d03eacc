#!/usr/bin/env bash
# Sets up and runs every test: the unit, vector and adversarial tests of CountersignCrypto, the CLI tests
# (OpenSSL, oathtool, Python's `cryptography`), the server's integration suite and the system tests (real
# `countersign serve` processes) on SQLite files and on a throwaway PostgreSQL 15 cluster on 127.0.0.1 that
# this script starts and stops.
#
#   bash scripts/test.sh          the full suite, as CI runs it
#   bash scripts/test.sh --fast   a quick loop: the Node and Swift unit, vector and integration tests without
#                                 PostgreSQL (its cases are absent or skipped, never passed) and without
#                                 CountersignSystemTests (no server process), schemathesis, fuzzing or browser
#
# After the Swift tests, schemathesis tests the HTTP API against docs/openapi.yaml (Tests/API, about 4 minutes),
# then a 60-second pass of the fuzz targets (scripts/fuzz.sh) over their seed corpus.
# Last, the web client runs in Debian's Chromium driven by Playwright (Tests/Web), bounded to 40 minutes;
# its screenshots are left in .build/web-artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
case "${1:-}" in
  --fast) fast=1 ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--fast]" >&2; exit 2 ;;
esac

# Tools the tests talk to. Installed only when missing, so the command is idempotent.
source scripts/lib/build-deps.sh
mapfile -t need_apt < <(build_deps_missing)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
command -v oathtool >/dev/null || need_apt+=(oathtool)
command -v node >/dev/null || need_apt+=(nodejs)
command -v zbarimg >/dev/null || need_apt+=(zbar-tools)
command -v argon2 >/dev/null || need_apt+=(argon2)
[ -x /usr/lib/postgresql/15/bin/initdb ] || need_apt+=(postgresql-15)
if [ "$fast" = 0 ]; then
  command -v chromium >/dev/null || need_apt+=(chromium)
  [ -d /usr/share/fonts/truetype/liberation ] || need_apt+=(fonts-liberation)
  # The relying party the OpenID Connect browser test puts in front of a page (tests_apache.py).
  [ -f /usr/lib/apache2/modules/mod_auth_openidc.so ] && [ -f /etc/mime.types ] ||
    need_apt+=(apache2 libapache2-mod-auth-openidc media-types)
fi
command -v psql >/dev/null || need_apt+=(postgresql-client-15)
command -v systemd-analyze >/dev/null || need_apt+=(systemd)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install -q cryptography
python3 -c 'import altcha' 2>/dev/null || python3 -m pip install -q altcha==2.3.0
python3 -c 'import openapi_spec_validator' 2>/dev/null || python3 -m pip install -q openapi-spec-validator==0.9.0
# WebAuthn peers (Tests/interop/webauthn_peer.py): python-fido2's CBOR/COSE encoders and py_webauthn's checks.
python3 -c 'import fido2, webauthn' 2>/dev/null || python3 -m pip install -q fido2==2.2.1 webauthn==3.0.1
# Web Push message encryption's peer (WebPushMessageTests): http_ece, the aes128gcm coding pywebpush uses.
python3 -c 'import http_ece' 2>/dev/null || python3 -m pip install -q http_ece==1.2.1
# The fake push service's VAPID check (Tests/interop/fake_push_service.py, WebPushDeliveryTests).
python3 -c 'import jwt' 2>/dev/null || python3 -m pip install -q PyJWT==2.15.1
# The fake APNs's HTTP/2 (Tests/interop/fake_apns.py, APNsDeliveryTests).
python3 -c 'import h2' 2>/dev/null || python3 -m pip install -q h2==4.4.1
if [ "$fast" = 0 ]; then
  python3 -c 'import playwright' 2>/dev/null || python3 -m pip install -q playwright==1.65.2
  # The OpenID Connect relying party nobody here wrote (Tests/Web/tests_oidc.py).
  python3 -c 'import authlib, requests' 2>/dev/null || python3 -m pip install -q authlib==1.6.5 requests==2.32.5
  # The API phase (Tests/API): schemathesis over the whole OpenAPI document.
  python3 -c 'import schemathesis' 2>/dev/null || python3 -m pip install -q schemathesis==4.32.5
fi

# Every symlink in the tree resolves (Fuzz/ links server sources in; a moved file otherwise fails only at the
# fuzz phase, half an hour in).
dangling=$(find Sources Tests Fuzz Benchmarks Plugins scripts deploy docs -xtype l)
if [ -n "$dangling" ]; then echo "dangling symlinks (a linked file moved; point them at its new path):" >&2; echo "$dangling" >&2; exit 1; fi

# The OpenAPI document must be valid OpenAPI 3.1.
python3 -m openapi_spec_validator docs/openapi.yaml

# The web client's pure modules under Node's own test runner (Tests/WebUnit), a second.
node --test Tests/WebUnit/*.test.mjs

# The whole tree keeps the project's format (.swift-format); `swift format --in-place -r -p Sources Tests
# Benchmarks Plugins Fuzz Package.swift` fixes what this reports.
swift format lint --strict --recursive --parallel Sources Tests Benchmarks Plugins Fuzz Package.swift

# A crash's backtrace: the crashed thread only, unsymbolicated (symbolicating a debug build took over 10
# minutes here, and on a loaded machine a crash's report ran 25 minutes): the event stream below names the
# tests that were running, and `addr2line -f -C -e BINARY ADDRESS` symbolicates a frame afterwards.
export SWIFT_BACKTRACE=enable=yes,interactive=no,threads=crashed,symbolicate=off,registers=none,images=none,limit=32
# What this run starts is marked, and whatever it leaves behind is stopped (scripts/lib/reap.sh).
source scripts/lib/reap.sh
# Bounded: a crash whose backtrace stalls or a hung test fails the run instead of outliving CI's 90
# minutes. A run that fails says which tests had not finished (a crash hides every other result).
# Arguments are passed to `swift test` (--fast: `--skip CountersignSystemTests`).
run_tests() {
  local events status=0
  events=$(mktemp /tmp/countersign-test-events-XXXXXX.jsonl)
  timeout --kill-after=30 1800 swift test --skip-build --parallel "$@" \
    --event-stream-output-path "$events" --event-stream-version 0 || status=$?
  reap_run
  if [ "$status" != 0 ]; then
    echo "swift test failed (exit $status)" >&2
    python3 scripts/lib/unfinished_tests.py "$events" >&2 || true
  fi
  rm -f "$events"
  return "$status"
}

# The quick loop: no PostgreSQL, and no server process (CountersignSystemTests holds every test that starts
# `countersign serve`).
if [ "$fast" = 1 ]; then
  trap reap_run EXIT
  unset COUNTERSIGN_TEST_POSTGRES_URL COUNTERSIGN_REQUIRE_POSTGRES
  swift build --build-tests
  run_tests --skip 'CountersignSystemTests\.'
  exit 0
fi

# PostgreSQL: a throwaway cluster, stopped on exit. fsync is off: the tests need its semantics, not its durability.
PG_EXTRA_OPTIONS="-c fsync=off"
source scripts/lib/postgres.sh
trap 'stop_pg; reap_run' EXIT
export COUNTERSIGN_REQUIRE_POSTGRES=1

swift build --build-tests
run_tests

# The HTTP API against its document: schemathesis over every operation of docs/openapi.yaml with an account,
# a messaging device, an authenticator and binding secrets, then the stateful phase along the document's
# links (Tests/API/schemathesis_run.py). 240 s of testing; the bound covers the setup and a stalled run.
timeout --kill-after=30 420 python3 Tests/API/schemathesis_run.py "$(swift build --show-bin-path)/countersign" 240

# A short bounded pass of every fuzz target over its seed corpus (scripts/fuzz.sh; the long run is
# `bash scripts/fuzz.sh 600`). The sanitized build of Fuzz/ is cached in .build-fuzz; the bound covers a
# first build too.
timeout --kill-after=30 1800 bash scripts/fuzz.sh 60

# The systemd unit (deploy/countersign.service) is valid for the binary just built, and its sandbox keeps
# systemd's exposure score at 2.0 or below (`--threshold` counts tenths).
unit_dir=$(mktemp -d)
sed "s#/usr/local/bin/countersign-server#$(swift build --show-bin-path)/countersign-server#" deploy/countersign.service > "$unit_dir/countersign.service"
systemd-analyze verify "$unit_dir/countersign.service"
systemd-analyze security --offline=true --threshold=20 "$unit_dir/countersign.service" | tail -1
rm -rf "$unit_dir"

# The web client in a real browser (after the Swift tests, which leave the debug build of `countersign`):
# about 10 minutes on 2 cores, more when busy (88 tests), bounded at 40.
timeout --kill-after=30 2400 python3 Tests/Web/web_tests.py "$(swift build --show-bin-path)/countersign" .build/web-artifacts
