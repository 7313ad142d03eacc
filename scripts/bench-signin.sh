#!/usr/bin/env bash
# Sign-ins per second over HTTP beside raw Argon2id hashes per second, measured in the same run.
#   bash scripts/bench-signin.sh [CONNECTIONS] [SECONDS] [sqlite|postgres]     (defaults 16 15 sqlite)
# Release build; the server runs with --captcha off (a solved captcha costs the client, not the server's
# hash budget) on a fresh SQLite file, or with `postgres` on a throwaway PostgreSQL 15 cluster (fsync on); `wrk` (Debian) drives POST /v1/sessions with CONNECTIONS
# connections over 64 accounts, every sign-in a real Argon2id (m=19 MiB, t=2, p=1) check that creates a
# session and an audit row. Goals: >= 50 sign-ins/s per core, and >= 0.95 of the raw rate of libsodium's
# Argon2id on all cores, measured for 3 s before the server starts and again after the HTTP run (the ratio
# takes their mean). Then, for enumeration safety, the time of a
# wrong-password sign-in for 30 real usernames and for 30 unknown ones (one attempt each, sequential).
# It also prints where each sign-in's time went (the server's hash threads, the rest of the server, wrk,
# idle cores) and the server CPU of GET /healthz at the same rate: the HTTP stack's floor.
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-16}; secs=${2:-15}; backend=${3:-sqlite}
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
command -v wrk >/dev/null || missing+=(wrk)
command -v curl >/dev/null || missing+=(curl)
[ "$backend" = sqlite ] || [ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# The benchmarks' own scratch path (.build-bench, as scripts/lib/bench-server.sh), so that a build in .build is
# neither waited for nor disturbed. One product per invocation: swift build honours only the last --product.
scratch=${BENCH_SCRATCH:-.build-bench}
swift build -c release --scratch-path "$scratch" --product countersign-server >&2
swift build -c release --scratch-path "$scratch" --product countersign-bench >&2
bin=$scratch/release
cores=$(nproc)
work=$(mktemp -d)
database="sqlite:$work/bench.sqlite"
if [ "$backend" = postgres ]; then
  source scripts/lib/postgres.sh
  database=$COUNTERSIGN_TEST_POSTGRES_URL
fi
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; [ "$backend" = sqlite ] || stop_pg; }
trap cleanup EXIT

echo "== raw Argon2id (the hasher in use, libsodium), before the server starts"
raw=$("$bin/countersign-bench" argon2 20)
echo "$raw"
raw_all=$(echo "$raw" | sed -nE 's/.*all [0-9]+ cores: ([0-9.]+) hashes\/s.*/\1/p')

echo "== server: $cores cores, $backend, captcha off"
COUNTERSIGN_REGISTRATIONS_PER_ADDRESS=1000 COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS=1000 "$bin/countersign-server" serve --port 0 --captcha off \
  --database "$database" > "$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q listening "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o 'listening on http://[^ ]*' "$work/serve.log" | sed 's/^listening on //')
for i in $(seq 0 63); do
  curl -sf -o /dev/null -X POST "$url/v1/accounts" -H 'Content-Type: application/json' \
    -d "{\"username\":\"bench$i\",\"password\":\"correct horse battery\",\"name\":\"B\",\"lastname\":\"Ench\"}"
done
cat > "$work/signin.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local body = '{"username":"bench' .. (n % 64) .. '","password":"correct horse battery"}'
  return wrk.format("POST", "/v1/sessions", {["Content-Type"] = "application/json"}, body)
end
LUA
# CPU time (clock ticks, utime + stime) of a process and its threads, and the cores' idle ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
idle() { awk '/^cpu / { print $5 + $6 }' /proc/stat; }
# CPU time (ns) of the server's hash threads (HashThreads: an NIOThreadPool, threads named TP-#n).
hashing() { for t in /proc/"$1"/task/*; do grep -q '^TP-#' "$t/comm" && cut -d' ' -f1 "$t/schedstat"; done | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# One wrk thread: the load generator shares the cores with the server.
s0=$(ticks "$pid"); i0=$(idle); t0=$(hashing "$pid")
wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$work/signin.lua" "$url" > "$work/wrk.txt" &
wpid=$!
sleep 1; w0=$(ticks "$wpid")
sleep $((secs - 2)); w1=$(ticks "$wpid"); s1=$(ticks "$pid"); i1=$(idle); t1=$(hashing "$pid"); wait "$wpid"
grep -E "Latency|50%|99%|Requests/sec|Non-2xx|requests in" "$work/wrk.txt"
sleep 2   # the requests in flight drain
echo "== raw Argon2id on all cores again, after the HTTP run (the server idle)"
# Its CPU time too (bash's `time`: user and system seconds of the child, and the wall time).
TIMEFORMAT='%R %U %S'
{ time "$bin/countersign-bench" argon2-all 3 > "$work/raw_after.txt"; } 2> "$work/raw_after.time"
raw_after=$(cat "$work/raw_after.txt")
echo "$raw_after"
raw_after=$(echo "$raw_after" | sed -nE 's/.*all [0-9]+ cores: ([0-9.]+) hashes\/s.*/\1/p')
rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
hz=$(getconf CLK_TCK)
# Where the time went. Raw: CPU per hash on all cores, and the cores' idle share. Per sign-in: the
# server's hash threads, the rest of the server (HTTP, JSON, the database), wrk, and idle cores; with no
# idle core and the same costs, the sign-ins per second would be the "ceiling".
read -r real user sys < "$work/raw_after.time"
awk -v r="$rps" -v s="$((s1 - s0))" -v t="$((t1 - t0))" -v w="$((w1 - w0))" -v i="$((i1 - i0))" -v hz="$hz" \
  -v secs="$secs" -v c="$cores" -v h2="$raw_after" -v real="$real" -v cpu="$(echo "$user + $sys" | bc)" -v h="$raw_all" 'BEGIN {
  printf "raw on all cores: %.2f ms of CPU per hash, cores %.0f%% idle (the run after)\n",
    cpu * 1000 / (h2 * real), 100 * (1 - cpu / real / c)
  n = r * (secs - 1)   # sign-ins while the server and the idle ticks were measured (wrk: secs - 2 s)
  hashing = t / 1e6 / n; rest = s * 1000 / hz / n - hashing; wrk = w * 1000 / hz / (r * (secs - 2))
  idle = i * 1000 / hz / n
  printf "per sign-in: hashing %.2f ms of CPU, the rest of the server %.2f ms, wrk %.2f ms, cores idle %.2f ms (%.0f%%); with no idle core: %.0f sign-ins/s\n",
    hashing, rest, wrk, idle, 100 * i / hz / (secs - 1) / c, c * 1000 / (hashing + rest + wrk) }'
non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.txt"); non2xx=${non2xx:-0}
awk -v r="$rps" -v c="$cores" -v h1="$raw_all" -v h2="$raw_after" -v bad="$non2xx" -v conns="$conns" 'BEGIN {
  h = (h1 + h2) / 2
  printf "sign-ins: %.1f/s with %d connections on %d cores = %.1f per core (goal 50); raw Argon2id on all cores %.1f hashes/s (%.1f before, %.1f after); ratio sign-ins/raw %.2f (goal 0.95); non-2xx %d\n",
    r, conns, c, r / c, h, h1, h2, r / h, bad }'

echo "== the HTTP floor: GET /healthz at the sign-in rate ($conns connections, 5 s)"
pace=$(awk -v r="$rps" -v n="$conns" 'BEGIN { printf "%d", n * 1000 / r }')
printf 'function delay() return %s end\n' "$pace" > "$work/paced.lua"
h0=$(ticks "$pid")
wrk -t1 -c"$conns" -d5s -s "$work/paced.lua" "$url/healthz" > "$work/floor.txt"
h1=$(ticks "$pid")
awk -v t="$((h1 - h0))" -v hz="$hz" -v n="$(awk '/requests in/ {print $1}' "$work/floor.txt")" 'BEGIN {
  printf "healthz: %d requests, server CPU %.2f ms per request\n", n, t * 1000 / hz / n }'

echo "== wrong password: real vs unknown usernames (30 each, interleaved, after the queue drained)"
for i in $(seq 0 29); do
  for kind in real unknown; do
    name=$([ "$kind" = real ] && echo "bench$i" || echo "nobody$i")
    t=$(curl -s -o /dev/null -w '%{time_total}' -X POST "$url/v1/sessions" -H 'Content-Type: application/json' \
      -d "{\"username\":\"$name\",\"password\":\"wrong password!\"}")
    echo "$t" >> "$work/$kind.times"
  done
done
for kind in real unknown; do
  sort -n "$work/$kind.times" | awk -v k="$kind" '{ t[NR] = $1 * 1000; s += $1 * 1000 } END {
    printf "%-7s mean %.1f ms, median %.1f ms, min %.1f, max %.1f\n", k, s / NR, t[int((NR + 1) / 2)], t[1], t[NR] }'
done
