#!/usr/bin/env bash
# The web client's everyday speed in headless Chromium, each figure beside a peer measured in the same run
# (Benchmarks/Web/app_speed.py): sign-in with the captcha, reload to usable, the message list with 1,000
# stored messages, opening a 200-message conversation.
#   bash scripts/bench-web-app.sh [RUNS]        (default 11, at least 11)
# Release build (scratch path .build-bench), like the other benchmarks; BINARY=PATH uses another build;
# COUNTERSIGN_WEB_ROOT serves another copy of the web client. Needs Debian's chromium and Playwright.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "needs Debian's chromium (apt-get install chromium)" >&2; exit 1; }
python3 -c 'import playwright' 2>/dev/null || python3 -m pip install -q playwright==1.65.2
if [ -z "${BINARY:-}" ]; then
  scratch=${BENCH_SCRATCH:-.build-bench}
  swift build -c release --scratch-path "$scratch" --product countersign-server >&2
  swift build -c release --scratch-path "$scratch" --product countersign >&2
  BINARY=$scratch/release/countersign
fi
exec python3 Benchmarks/Web/app_speed.py "$BINARY" "${1:-11}"
