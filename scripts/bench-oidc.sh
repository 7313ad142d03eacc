#!/usr/bin/env bash
# The OpenID Connect provider's speed (docs/PROTOCOL.md §6; issue "OpenID Connect provider" §5).
#   bash scripts/bench-oidc.sh [CODES]     (default 20000; OIDC_ACCOUNTS=8 (registrations are 10 per address), OIDC_CONCURRENCY=16)
# Release build (scratch path .build-bench). The server runs on a fresh SQLite file with a public URL (the
# issuer) and one confidential client registered by `countersign-server admin oidc-client add` (policy
# password, refresh tokens). `countersign-bench-push oidc-run` measures, over keep-alive loopback HTTP/1.1:
# the raw ES256 signing rate of this machine first (the peer: one signature per ID token), then 2,000 single
# sign-on round trips (a signed-in session whose consent is remembered: authorization → code → token), CODES
# codes made, all exchanged (OIDC_CONCURRENCY in flight), and every refresh token they gave used once.
# Goals on 2 cores: >= 2,000 code exchanges/s and refresh grants/s, p99 <= 25 ms; SSO round trip p99 <= 40 ms;
# idle RSS within 10% of a provider-less server's (measured on its own fresh file first). The last line is
#   oidc: code exchanges E/s (p99 P ms), refresh grants R/s (p99 Q ms), es256 S/s (exchange/signing X), sso p99 Y ms, rss idle Z MiB
set -euo pipefail
cd "$(dirname "$0")/.."
codes=${1:-20000}; accounts=${OIDC_ACCOUNTS:-8}; width=${OIDC_CONCURRENCY:-16}
case $codes in ''|*[!0-9]*) echo "usage: bash scripts/bench-oidc.sh [CODES]" >&2; exit 2 ;; esac
source scripts/lib/bench-server.sh
bench_build countersign-bench-push

rss_of() { awk '/^VmRSS:/ {print int($2/1024)}' "/proc/$1/status"; }

echo "== peer: a server without a public URL (no provider), idle"
bench_serve "$work/plain.sqlite" "$work/plain.log"
sleep 3
plain_rss=$(rss_of "$pid")
echo "idle rss without the provider: $plain_rss MiB"
kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=

echo "== server: $(nproc) cores, sqlite, captcha off, issuer https://cs.bench.example"
export COUNTERSIGN_PUBLIC_URL=https://cs.bench.example
bench_serve "$work/bench.sqlite" "$work/serve.log"
echo "server $url, pid $pid"
secret=$("$bin/countersign-server" admin oidc-client add bench --name "Bench app" \
  --redirect-uri https://app.bench.example/cb --policy password --offline-access yes \
  --database "sqlite:$work/bench.sqlite" | sed -n 's/^client_secret: //p')
[ -n "$secret" ] || { echo "the client was not registered" >&2; exit 1; }
sleep 2
provider_rss=$(rss_of "$pid")
echo "idle rss with the provider: $provider_rss MiB ($(awk -v a="$provider_rss" -v b="$plain_rss" 'BEGIN {printf "%.2f", a/b}')x the provider-less server)"

echo "== run: $accounts accounts, $codes codes, $width in flight"
bench_generate oidc-run "$url" "$pid" bench "$secret" "$accounts" "$codes" "$width"

bench_server_log "$work/serve.log"
last=$(grep '^oidc: ' "$work/run.txt" | tail -1 || true)
if [ -n "$last" ]; then
  echo "$last; provider-less idle rss $plain_rss MiB"
else
  echo "oidc: no result (generator exit $status)"
  exit 1
fi
