#!/usr/bin/env bash
# Push-approval round trip with paired authenticators connected (docs/PROTOCOL.md §3, issue "Multi-factor
# sign-in" section 6).
#   bash scripts/bench-mfa.sh [AUTHENTICATORS]     (default 1000; MFA_RATE=20 sign-ins/s, MFA_SECONDS=15)
# Release build (scratch path .build-bench). `countersign-bench-push mfa-setup` fills a fresh SQLite file
# before the server starts: AUTHENTICATORS accounts, each with one authenticator paired through the
# server's MFAService (pairing key, signed pairing request). The server then runs on it; `mfa-run`
# connects every authenticator's push channel and signs in MFA_RATE accounts per second (each account
# once) over keep-alive loopback connections: POST /v1/sessions (password: one Argon2id hash, 202 with
# the number to match) → the `mfaChallenge` frame on that account's push channel, checked against the
# server's challenge key → an ES256 answer signed by the device key with the number (POST
# /v1/authenticator/answers) → the sign-in's long poll sees COMPLETED → POST .../session → 201.
# It prints the password step, the push approval (from the first moment either side knew of the
# transaction to the session: everything but the password hash), and the whole sign-in. Goal: push
# approval p99 <= 25 ms with 1,000 connected authenticators. The last line is
#   mfa: N authenticators, push approval p50 A ms, p99 B ms; whole sign-in p50 C ms, p99 D ms at R sign-ins/s, failed F
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}; rate=${MFA_RATE:-20}; secs=${MFA_SECONDS:-15}
case $count in ''|*[!0-9]*) echo "usage: bash scripts/bench-mfa.sh [AUTHENTICATORS]" >&2; exit 2 ;; esac
source scripts/lib/bench-server.sh
bench_build countersign-bench-push

echo "== setup: $count accounts with a paired authenticator in a fresh SQLite file"
"$bin/countersign-bench-push" mfa-setup "$work/bench.sqlite" "$count" "$work"

echo "== server: $(nproc) cores, sqlite, captcha off"
bench_serve "$work/bench.sqlite" "$work/serve.log"
echo "server $url, pid $pid"

echo "== run: $count authenticators connected, then $rate sign-ins/s for $secs s"
bench_generate mfa-run "$url" "$pid" "$work" "$count" "$rate" "$secs"

bench_server_log "$work/serve.log"
last=$(grep '^mfa: ' "$work/run.txt" | tail -1 || true)
if [ -n "$last" ]; then
  echo "$last"
else
  echo "mfa: 0 authenticators, push approval p50 n/a ms, p99 n/a ms; whole sign-in p50 n/a ms, p99 n/a ms at 0 sign-ins/s, failed n/a (generator exit $status)"
  exit 1
fi
