#!/usr/bin/env bash
# Push-approval round trip with paired authenticators connected (docs/SPEC.md §4h, issue "Multi-factor
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
missing=()
[ -f /usr/include/argon2.h ] || missing+=(libargon2-dev)
[ -f /usr/include/qrencode.h ] || missing+=(libqrencode-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
scratch=${PUSH_SCRATCH:-.build-bench}
swift build -c release --scratch-path "$scratch" --product countersign >&2
swift build -c release --scratch-path "$scratch" --product countersign-bench-push >&2
bin=$scratch/release
work=$(mktemp -d)
pid=; gen=
cleanup() {
  if [ -n "$gen" ]; then kill -TERM "$gen" 2>/dev/null || true; fi
  if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

echo "== setup: $count accounts with a paired authenticator in a fresh SQLite file"
"$bin/countersign-bench-push" mfa-setup "$work/bench.sqlite" "$count" "$work"

hard=$(ulimit -Hn)
echo "== server: $(nproc) cores, sqlite, captcha off"
( ulimit -n "$hard"
  COUNTERSIGN_LOG_LEVEL=warning COUNTERSIGN_EXIT_WITH_PARENT=1 \
    exec setsid "$bin/countersign" serve --port 0 --captcha off --database "sqlite:$work/bench.sqlite" ) > "$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q listening "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/serve.log" || true)
if [ -z "$url" ]; then echo "the server did not start:" >&2; cat "$work/serve.log" >&2; exit 1; fi
echo "server $url, pid $pid"

echo "== run: $count authenticators connected, then $rate sign-ins/s for $secs s"
status=0
( ulimit -n "$hard"; exec "$bin/countersign-bench-push" mfa-run "$url" "$pid" "$work" "$count" "$rate" "$secs" ) > "$work/run.txt" 2>&1 &
gen=$!
tail -n +1 -f --pid="$gen" "$work/run.txt" &
follower=$!
wait "$gen" || status=$?
wait "$follower" 2>/dev/null || true
gen=

problems=$(grep -ciE 'warning|error|critical' "$work/serve.log" || true)
echo "server log: $problems warning/error lines"
if [ "$problems" -gt 0 ]; then
  grep -iE 'warning|error|critical' "$work/serve.log" | sed -E 's/^[0-9T:.+-]+ //' | sort | uniq -c | sort -rn | head -5
fi
last=$(grep '^mfa: ' "$work/run.txt" | tail -1 || true)
if [ -n "$last" ]; then
  echo "$last"
else
  echo "mfa: 0 authenticators, push approval p50 n/a ms, p99 n/a ms; whole sign-in p50 n/a ms, p99 n/a ms at 0 sign-ins/s, failed n/a (generator exit $status)"
  exit 1
fi
