#!/usr/bin/env bash
# Messages accepted per second and fetched+acknowledged per second over HTTP, beside the raw insert rate
# of the same database measured in the same run.
#   bash scripts/bench-messages.sh [sqlite|postgres] [DEVICES] [SECONDS]        (defaults sqlite 8 10)
# Release build. DEVICES sender devices (and as many recipients, one device each) are made through the SDK;
# each sender's envelopes are sealed beforehand (signed, sealed to 2 devices: its recipient's and its own),
# so the timed run measures the server: read the device session, parse, verify the ECDSA signature (on
# a per-core queue), check sender, recipients and device set inside the write
# transaction, store the envelope once and queue it twice (docs/DESIGN.md). `wrk` (Debian) sends them: one wrk thread per sender device, 4
# connections each; only 201 answers count. Then every recipient drains its queue (fetch 100, ack).
# The peer: single-row INSERT transactions of a same-sized row (SQLite WAL synchronous=NORMAL via Python's
# sqlite3; PostgreSQL via pgbench), the cost floor of "one send, one transaction".
# Goals (issue 9): >= 5,000 messages/s accepted on SQLite, >= 4,000 on PostgreSQL, on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-sqlite}; devices=${2:-8}; secs=${3:-10}
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
command -v wrk >/dev/null || missing+=(wrk)
[ "$backend" = sqlite ] || [ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# The benchmarks' own scratch path (shared with bench-push.sh and bench-mfa.sh): never waits for, or
# disturbs, a build in .build.
scratch=${BENCH_SCRATCH:-.build-bench}
swift build -c release --scratch-path "$scratch" --product countersign-server >&2
swift build -c release --scratch-path "$scratch" --product countersign-bench-messages >&2
bin=$scratch/release
work=$(mktemp -d)
database="sqlite:$work/bench.sqlite"
if [ "$backend" = postgres ]; then
  source scripts/lib/postgres.sh
  database=$COUNTERSIGN_TEST_POSTGRES_URL
fi
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; [ "$backend" = sqlite ] || stop_pg; }
trap cleanup EXIT
# Enough envelopes that no sender runs out within the run at 12,000/s in all (a repeat would be an idempotent 200, not counted).
per_device=$(( 12000 * secs / devices + 1000 ))

echo "== raw $backend inserts, one row (~700 bytes) per transaction"
if [ "$backend" = sqlite ]; then
  raw=$(python3 - "$work/raw.sqlite" <<'PY'
import sqlite3, sys, time, os
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE raw (id TEXT PRIMARY KEY, body BLOB)")
body = os.urandom(700); n = 0; start = time.perf_counter()
while time.perf_counter() - start < 3:
    db.execute("BEGIN"); db.execute("INSERT INTO raw VALUES (?, ?)", (str(n), body)); db.execute("COMMIT"); n += 1
print(f"{n / (time.perf_counter() - start):.0f}")
PY
)
else
  psql -q "$database" -c "CREATE TABLE raw (id BIGSERIAL PRIMARY KEY, body BYTEA)"
  echo "INSERT INTO raw (body) VALUES (decode(repeat('ab', 700), 'hex'));" > "$work/insert.sql"
  raw=$(/usr/lib/postgresql/15/bin/pgbench -n -f "$work/insert.sql" -c 8 -j 2 -T 3 "$database" 2>/dev/null | awk '/^tps/ {printf "%.0f", $3}')
  psql -q "$database" -c "DROP TABLE raw"
fi
echo "raw inserts: $raw rows/s"

cat > "$work/send.lua" <<'LUA'
-- One wrk thread per sender device: its token, its pre-sealed bodies; 201s counted per thread.
local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end
function init(args)
  local dir = args[1]
  local tokens = {}
  for line in io.lines(dir .. "/tokens.txt") do table.insert(tokens, line) end
  token = tokens[id]
  bodies = {}
  for line in io.lines(dir .. "/bodies-" .. id .. ".txt") do table.insert(bodies, line) end
  n = 0; accepted = 0; other = 0
end
function request()
  n = n + 1
  if n > #bodies then n = 1 end
  return wrk.format("POST", "/v1/messages", {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, bodies[n])
end
function response(status, headers, body)
  if status == 201 then accepted = accepted + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  local a, o = 0, 0
  for _, t in ipairs(threads) do a = a + t:get("accepted"); o = o + t:get("other") end
  io.write(string.format("accepted %d, other answers %d\n", a, o))
end
LUA

# One server per batch setting, each on its own fresh database, so the group commit's effect is a ratio
# measured in this run: COUNTERSIGN_SEND_BATCH=1 writes every send in its own transaction.
declare -A rates
for batch in ${BENCH_BATCHES:-1 128}; do
  run="$work/batch-$batch"; mkdir -p "$run"
  db="sqlite:$run/bench.sqlite"
  if [ "$backend" = postgres ]; then
    psql -q "$COUNTERSIGN_TEST_POSTGRES_URL" -c "CREATE DATABASE bench_$batch"
    db="${COUNTERSIGN_TEST_POSTGRES_URL%/*}/bench_$batch"
  fi
  echo "== server: $(nproc) cores, $backend, captcha off, COUNTERSIGN_SEND_BATCH=$batch; $devices sender devices"
  COUNTERSIGN_SEND_BATCH=$batch COUNTERSIGN_REGISTRATIONS_PER_ADDRESS=100000 COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS=100000 COUNTERSIGN_SENDS_PER_ACCOUNT=0 \
    COUNTERSIGN_LOG_LEVEL=warning "${BENCH_SERVER:-$bin/countersign-server}" serve --port 0 --captcha off --database "$db" > "$run/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$run/serve.log" && break; sleep 0.1; done
  url=$(grep -o 'listening on http://[^ ]*' "$run/serve.log" | sed 's/^listening on //')
  "$bin/countersign-bench-messages" setup "$url" "$devices" "$per_device" "$run"
  wrk -t"$devices" -c$((devices * 4)) -d"${secs}s" --latency -s "$work/send.lua" "$url" -- "$run" > "$run/wrk.txt"
  grep -E "Latency|50%|99%|Requests/sec|requests in|accepted" "$run/wrk.txt"
  accepted=$(awk '/^accepted/ {print $2}' "$run/wrk.txt" | tr -d ,)
  rates[$batch]=$(python3 -c "print(f'{$accepted / $secs:.0f}')")
  echo "accepted: ${rates[$batch]} messages/s"
  "$bin/countersign-bench-messages" drain "$url" "$run"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
if [ -z "${rates[1]:-}" ] || [ -z "${rates[128]:-}" ]; then
  echo "no summary: it compares BENCH_BATCHES=\"1 128\" (the default)"
  exit 0
fi
python3 - "${rates[1]}" "${rates[128]}" "$raw" "$backend" <<'PY'
import sys
single, batched, raw, backend = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
goal = 5000 if backend == "sqlite" else 4000
print(f"accepted with group commit: {batched:.0f} messages/s = {batched / single:.2f} x one transaction per send ({single:.0f}/s)"
      f" = {batched / raw:.2f} x the raw single-row insert rate ({raw:.0f}/s); goal {goal}/s: {'met' if batched >= goal else 'NOT met'}")
PY
