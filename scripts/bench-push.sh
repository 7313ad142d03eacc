#!/usr/bin/env bash
# Push channel at scale (docs/PROTOCOL.md §2): idle connections one node holds, and send→receive latency.
#   bash scripts/bench-push.sh [CONNS]        (default 10000; PUSH_RATE=1000 msgs/s, PUSH_SECONDS=10)
# Release build (scratch path .build-bench). `countersign-bench-push setup` fills a fresh SQLite file before
# the server starts (CONNS accounts with one device and one device session each, plus 8 sender accounts:
# one Argon2id hash in all, the rows written with the server's own stores); the server is started on it
# under the hard file limit; `countersign-bench-push run` connects CONNS push channels (200 at a time, failures
# retried), reads the server's VmRSS before and after (idle 5 s), pre-seals RATE*SECONDS envelopes to random
# connected devices and sends them at RATE over 32 keep-alive connections, timing each from just before its
# POST is written to the moment the target's connection reads the `message` frame.
# Goals (issue section 5): 10,000 connections on one node, <= 16 KiB per idle connection, p99 <= 25 ms at
# 1,000 msgs/s, lost 0. The last line is
#   push: CONNS connections, K KiB per idle connection, p50 A ms, p99 B ms at R msgs/s, lost L
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-10000}; rate=${PUSH_RATE:-1000}; secs=${PUSH_SECONDS:-10}; senders=8
case $conns in ''|*[!0-9]*) echo "usage: bash scripts/bench-push.sh [CONNS]" >&2; exit 2 ;; esac
began=$(date +%s.%N)
source scripts/lib/bench-server.sh
bench_build countersign-bench-push

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(date +%s.%N)"; }

echo "== setup: $conns device accounts + $senders senders in a fresh SQLite file"
t=$(date +%s.%N)
"$bin/countersign-bench-push" setup "$work/bench.sqlite" "$conns" "$senders" "$work"
echo "setup took $(elapsed "$t") s"

hard=$(ulimit -Hn)
need=$((conns + 1000))
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
  echo "warning: the hard file limit ($hard) is below $need; connections beyond it will fail" >&2
fi
echo "== server: $(nproc) cores, sqlite, captcha off, file limit raised to $hard"
bench_serve "$work/bench.sqlite" "$work/serve.log"
# The server's own pid (setsid execs in place, so $pid is it).
echo "server $url, pid $pid, file limit $(awk '/Max open files/ {print $4}' "/proc/$pid/limits")"

echo "== run: $conns connections, then $rate msgs/s for $secs s"
t=$(date +%s.%N)
bench_generate run "$url" "$pid" "$work" "$conns" "$rate" "$secs"
echo "run took $(elapsed "$t") s; whole script $(elapsed "$began") s"

bench_server_log "$work/serve.log"
if ! kill -0 "$pid" 2>/dev/null; then echo "the server is no longer running" >&2; fi

last=$(grep '^push: ' "$work/run.txt" | tail -1 || true)
if [ -n "$last" ]; then
  echo "$last"
else
  # The generator failed before its summary: still end with the line, from what it printed.
  n=$(grep -oE '^connected [0-9]+' "$work/run.txt" | awk '{print $2}' | tail -1)
  echo "push: ${n:-0} connections, n/a KiB per idle connection, p50 n/a ms, p99 n/a ms at 0 msgs/s, lost n/a (generator exit $status)"
fi
