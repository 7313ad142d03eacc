#!/usr/bin/env bash
# Argon2id hashes per second per core with the OWASP parameters (m = 19 MiB, t = 2, p = 1), through
# Countersign's PasswordHasher and, in the same run, through the reference `argon2` command (same
# library, Debian package argon2). The server's sign-in rate per core is bounded by this figure.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
[ -f /usr/include/argon2.h ] || missing+=(libargon2-dev)
[ -f /usr/include/qrencode.h ] || missing+=(libqrencode-dev)
command -v argon2 >/dev/null || missing+=(argon2)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
swift build -c release --product countersign-bench >&2
ours=$(.build/release/countersign-bench argon2 30)
echo "$ours"
total=0
for _ in $(seq 10); do
  s=$(echo -n "correct horse battery staple" | argon2 somesaltsomesalt -id -t 2 -k 19456 -p 1 | awk '/seconds/ {print $1}')
  total=$(awk -v a="$total" -v b="$s" 'BEGIN{print a + b}')
done
ref_ms=$(awk -v t="$total" 'BEGIN{printf "%.1f", t * 100}')
our_ms=$(echo "$ours" | awk '{print $(NF-8)}')
awk -v o="$our_ms" -v r="$ref_ms" 'BEGIN{printf "reference argon2 CLI: %.1f ms/hash (mean of 10); ratio ours/reference time %.2fx\n", r, o / r}'
