#!/usr/bin/env bash
# Sets up and runs every test: the unit, vector and adversarial tests of CountersignCrypto, and the CLI
# tests that check interoperability with OpenSSL, oathtool and Python's `cryptography`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools the tests talk to. Installed only when missing, so the command is idempotent.
need_apt=()
command -v openssl >/dev/null || need_apt+=(openssl)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
command -v oathtool >/dev/null || need_apt+=(oathtool)
[ -f /usr/include/argon2.h ] || need_apt+=(libargon2-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v argon2 >/dev/null || need_apt+=(argon2)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install -q cryptography

swift build --build-tests
swift test --skip-build --parallel
