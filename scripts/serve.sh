#!/usr/bin/env bash
# Sets up and runs the server on an embedded SQLite file (.data/countersign.sqlite, created on first start)
# and prints the URL it listens on. Extra arguments go to `countersign serve` (e.g. --port 9000 --captcha risk).
set -euo pipefail
cd "$(dirname "$0")/.."
# libargon2 (password hashing) and libqrencode (QR codes) are system libraries the package links.
if [ ! -f /usr/include/argon2.h ] || [ ! -f /usr/include/qrencode.h ] || ! command -v pkg-config >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libargon2-dev libqrencode-dev pkg-config
fi
swift build -c release --product countersign >&2
mkdir -p .data
exec .build/release/countersign serve --database "sqlite:$PWD/.data/countersign.sqlite" "$@"
