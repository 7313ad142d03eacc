#!/usr/bin/env bash
# A soak run on loopback: one release server on a fresh SQLite file under a mixed load for MINUTES (default
# 10, at most 240), one round a minute:
#   sign-ins with push approval: SOAK_RATE (5) sign-ins/s for 20 s, 200 paired authenticators connected
#     (countersign-bench-push mfa-run: password, challenge on the push channel, signed answer, session);
#   messages: 4 new sender devices send pre-sealed envelopes for 15 s over 8 connections (wrk), then every
#     recipient device fetches and acknowledges its queue (countersign-bench-messages drain).
# After each round it samples the server's RSS and open files and prints a row with the round's p99s.
# It fails on any error answer or failed sign-in, and when, after the 2-minute warm-up, RSS grows by more
# than 25% or open files by more than 64 over the warm-up's sample.
#   bash scripts/soak.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}; rate=${SOAK_RATE:-5}
case $minutes in ''|*[!0-9]*) echo "usage: bash scripts/soak.sh [MINUTES]" >&2; exit 2 ;; esac
if [ "$minutes" -lt 3 ] || [ "$minutes" -gt 240 ]; then echo "soak.sh: MINUTES is 3 to 240" >&2; exit 2; fi
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
source scripts/lib/bench-server.sh
bench_build countersign-bench-push
swift build -c release --scratch-path "${BENCH_SCRATCH:-.build-bench}" --product countersign-bench-messages >&2

"$bin/countersign-bench-push" mfa-setup "$work/soak.sqlite" 200 "$work" > /dev/null
COUNTERSIGN_REGISTRATIONS_PER_ADDRESS=1000000 COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS=1000000 \
  bench_serve "$work/soak.sqlite" "$work/serve.log"

cat > "$work/send.lua" <<'LUA'
local threads, counter = {}, 0
function setup(thread) counter = counter + 1; thread:set("id", counter); table.insert(threads, thread) end
function init(args)
  local dir = args[1]
  local tokens = {}
  for line in io.lines(dir .. "/tokens.txt") do table.insert(tokens, line) end
  token = tokens[(id - 1) % #tokens + 1]
  bodies = {}
  for line in io.lines(dir .. "/bodies-" .. ((id - 1) % #tokens + 1) .. ".txt") do table.insert(bodies, line) end
  n = 0; accepted = 0; other = 0
end
function request()
  n = n + 1
  if n > #bodies then n = 1 end
  return wrk.format("POST", "/v1/messages", {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, bodies[n])
end
function response(status) if status == 201 or status == 200 then accepted = accepted + 1 else other = other + 1 end end
function done()
  local a, o = 0, 0
  for _, t in ipairs(threads) do a = a + t:get("accepted"); o = o + t:get("other") end
  io.write(string.format("accepted %d, other %d\n", a, o))
end
LUA

sample() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status"; }
files() { ls "/proc/$pid/fd" | wc -l; }
echo "soak: $minutes minutes, server $url (pid $pid), $(nproc) cores"
printf '%6s %9s %6s %15s %13s %12s %9s %7s\n' minute "rss MiB" files "approval p99" "sign-in p99" "send p99" sends errors
failed=0; base_rss=; base_files=
for minute in $(seq 1 "$minutes"); do
  start=$(date +%s)
  round="$work/round-$minute"; mkdir -p "$round"
  ( ulimit -n "$(ulimit -Hn)"; exec "$bin/countersign-bench-push" mfa-run "$url" "$pid" "$work" 200 "$rate" 20 ) > "$round/mfa.txt" 2>&1 || true
  mfa=$(grep '^mfa: ' "$round/mfa.txt" | tail -1 || true)
  approval=$(echo "$mfa" | sed -nE 's/.*push approval p50 [0-9.]+ ms, p99 ([0-9.]+) ms.*/\1/p')
  signin=$(echo "$mfa" | sed -nE 's/.*whole sign-in p50 [0-9.]+ ms, p99 ([0-9.]+) ms.*/\1/p')
  mfa_failed=$(echo "$mfa" | sed -nE 's/.*failed ([0-9]+).*/\1/p')
  # New accounts each round (their names prefixed apart): the database grows, the server's memory must not.
  "$bin/countersign-bench-messages" setup "$url" 4 400 "$round" "m${minute}x" > /dev/null
  wrk -t4 -c8 -d15s --latency -s "$work/send.lua" "$url" -- "$round" > "$round/wrk.txt" 2>&1 || true
  send99=$(awk '$1 == "99%" {print $2}' "$round/wrk.txt")
  accepted=$(awk '/^accepted/ {print $2}' "$round/wrk.txt" | tr -d ,)
  other=$(awk '/^accepted/ {print $4}' "$round/wrk.txt")
  "$bin/countersign-bench-messages" drain "$url" "$round" > "$round/drain.txt" 2>&1 || other=$((${other:-0} + 1))
  errors=$(( ${mfa_failed:-1} + ${other:-1} ))
  [ -n "$mfa" ] || errors=$((errors + 1))
  rss=$(sample); open=$(files)
  printf '%6d %9s %6d %12s ms %10s ms %12s %9s %7d\n' "$minute" "$rss" "$open" "${approval:-n/a}" "${signin:-n/a}" "${send99:-n/a}" "${accepted:-0}" "$errors"
  if [ "$errors" -ne 0 ]; then
    failed=1
    # Say why, before the round's files go: the generator's last words and the drain's.
    tail -n 2 "$round/mfa.txt" "$round/drain.txt" 2>/dev/null | sed "s/^/  minute $minute: /" >&2 || true
  fi
  if [ "$minute" -eq 2 ]; then base_rss=$rss; base_files=$open; fi
  if [ -n "$base_rss" ] && [ "$minute" -gt 2 ]; then
    if awk -v r="$rss" -v b="$base_rss" 'BEGIN { exit !(r > b * 1.25) }'; then echo "soak: RSS grew from $base_rss to $rss MiB" >&2; failed=1; fi
    if [ "$open" -gt $((base_files + 64)) ]; then echo "soak: open files grew from $base_files to $open" >&2; failed=1; fi
  fi
  rm -rf "$round"
  left=$(( 60 - ($(date +%s) - start) ))
  [ "$minute" -eq "$minutes" ] || [ "$left" -le 0 ] || sleep "$left"
done
bench_server_log "$work/serve.log"
if [ "$failed" -ne 0 ]; then echo "soak: FAILED" >&2; exit 1; fi
echo "soak: passed ($minutes minutes, no errors, no growth after warm-up)"
