#!/usr/bin/env bash
# Argon2id with the OWASP parameters (m = 19 MiB, t = 2, p = 1), measured in one run: Countersign's
# PasswordHasher through libsodium (in use) and through libargon2 (the reference, Debian's scalar build),
# interleaved on one core, then libsodium on all cores (the raw rate sign-ins are held to); and the
# reference `argon2` command (libargon2 again, as a peer nobody here wrote).
#   bash scripts/bench-argon2.sh [HASHES]     HASHES per implementation (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-30}
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
command -v argon2 >/dev/null || missing+=(argon2)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
swift build -c release --product countersign-bench >&2
ours=$(.build/release/countersign-bench argon2 "$count")
echo "$ours"
total=0
for _ in $(seq 10); do
  s=$(echo -n "correct horse battery staple" | argon2 somesaltsomesalt -id -t 2 -k 19456 -p 1 | awk '/seconds/ {print $1}')
  total=$(awk -v a="$total" -v b="$s" 'BEGIN{print a + b}')
done
sodium_ms=$(echo "$ours" | sed -nE 's/.*libsodium ([0-9.]+) ms\/hash.*/\1/p')
awk -v o="$sodium_ms" -v t="$total" 'BEGIN{printf "reference argon2 CLI: %.1f ms/hash (mean of 10); libsodium is %.2fx faster\n", t * 100, t * 100 / o}'
