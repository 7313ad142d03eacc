#!/usr/bin/env bash
# Web Push at rate (docs/PROTOCOL.md §2.2, issue 37 §6): notifications/s and send→receipt latency, beside the
# raw per-notification cost measured in the same run.
#   bash scripts/bench-notify.sh [NOTIFICATIONS]   (default 10000; NOTIFY_RATE 2500/s, NOTIFY_DEVICES 2000,
#                                                   NOTIFY_BACKGROUND 500 msgs/s, NOTIFY_SIGNIN_SECONDS 8)
# Release build (scratch path .build-bench). `countersign-bench-push setup` fills a fresh SQLite file with
# NOTIFY_DEVICES accounts of one device each and 8 senders; the server starts on it with 127.0.0.1 allowed as a
# push host and a metrics token. `countersign-bench-push notify-run` then (Benchmarks/PushBench/NotifyRun.swift):
# - measures, in its own process on all cores, the raw cost of one notification (fresh key, ECDH, HKDF,
#   AES-GCM, the VAPID header cached): the peer;
# - subscribes half the devices to Web Push through the API, with keys it made, at its own push service
#   (HTTP/1.1 on loopback, answering 201);
# - sends NOTIFICATIONS messages to those devices at NOTIFY_RATE/s, timing each from just before its POST is
#   written to its push's arrival, every body opened with the subscription's keys and matched by the id inside;
# - sends 5 s of messages at NOTIFY_COMPARE_RATE/s (default 1000) without subscriptions, then with: their answers;
# - sends NOTIFICATIONS as fast as 64 in flight allow to devices without a subscription, with one, without again;
# - signs in for NOTIFY_SIGNIN_SECONDS alone, beside NOTIFY_BACKGROUND messages/s to devices without a subscription,
#   and beside as many to subscribed ones (the last two's ratio: what the pushes cost sign-ins).
# Goals (issue 37 §6), 2 cores: >= 2,000 notifications/s, p99 <= 250 ms, sends and sign-ins within 5%. The last
# line is
#   notify: N notifications at R/s offered, X/s received, p50 A ms, p99 B ms send→receipt; raw Y/s (ratio Z);
#   sends with/without pushes S; sign-ins beside pushes/sends I; lost L
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-10000}; rate=${NOTIFY_RATE:-2500}; devices=${NOTIFY_DEVICES:-2000}
background=${NOTIFY_BACKGROUND:-500}; signin=${NOTIFY_SIGNIN_SECONDS:-8}; senders=8
case $count in ''|*[!0-9]*) echo "usage: bash scripts/bench-notify.sh [NOTIFICATIONS]" >&2; exit 2 ;; esac
source scripts/lib/bench-server.sh
bench_build countersign-bench-push

echo "== setup: $devices device accounts + $senders senders in a fresh SQLite file"
"$bin/countersign-bench-push" setup "$work/bench.sqlite" "$devices" "$senders" "$work"

echo "== server: $(nproc) cores, sqlite, captcha off, 127.0.0.1 allowed as a push host"
export COUNTERSIGN_PUSH_ALLOWED_HOSTS=127.0.0.1 COUNTERSIGN_METRICS_TOKEN_FILE=$work/metrics-token
bench_serve "$work/bench.sqlite" "$work/serve.log"
echo "server $url, pid $pid, load $(cut -d' ' -f1-3 /proc/loadavg)"

bench_generate notify-run "$url" "$pid" "$work" "$count" "$rate" "$background" "$signin" "$work/metrics-token"
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
bench_server_log "$work/serve.log"

last=$(grep '^notify: ' "$work/run.txt" | tail -1 || true)
if [ -n "$last" ]; then
  echo "$last"
else
  echo "notify: $count notifications at $rate/s offered, n/a (generator exit $status)"
  exit 1
fi
