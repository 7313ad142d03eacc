#!/usr/bin/env bash
# Sets up and runs the server on an embedded SQLite file (.data/countersign.sqlite, created on first start)
# and prints the URL it listens on. Extra arguments go to `countersign-server serve` (e.g. --port 9000 --captcha risk, or
# --config FILE). Builds the command-line tool, .build/release/countersign, beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The system libraries the package links (password hashing, QR codes), installed when missing.
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# One product per invocation: swift build honours only the last --product given.
swift build -c release --product countersign-server >&2
swift build -c release --product countersign >&2
mkdir -p .data
exec .build/release/countersign-server serve --database "sqlite:$PWD/.data/countersign.sqlite" "$@"
