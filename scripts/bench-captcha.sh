#!/usr/bin/env bash
# The sign-in captcha's cost in headless Chromium, beside WebCrypto's hash rate in the same page
# (Benchmarks/Web/captcha_speed.py):
#   bash scripts/bench-captcha.sh [RUNS]        (default 21)
# Release build (scratch path .build-bench), like the other benchmarks; BINARY=PATH uses another build.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "needs Debian's chromium (apt-get install chromium)" >&2; exit 1; }
python3 -c 'import playwright' 2>/dev/null || python3 -m pip install -q playwright==1.65.2
if [ -z "${BINARY:-}" ]; then
  scratch=${BENCH_SCRATCH:-.build-bench}
  swift build -c release --scratch-path "$scratch" --product countersign >&2
  BINARY=$scratch/release/countersign
fi
exec python3 Benchmarks/Web/captcha_speed.py "$BINARY" "${1:-21}"
