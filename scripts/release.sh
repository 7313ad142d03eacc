#!/usr/bin/env bash
# A release build of `countersign` with the Swift runtime and Foundation linked in (--static-swift-stdlib):
# the machine it runs on needs glibc and Debian's libargon2-1, libsodium23 and libqrencode4, no Swift.
# Writes dist/: the binary, its resources bundle (the web client and the OpenAPI document, which it finds
# beside itself) and SHA256SUMS; prints `countersign version` and the shared libraries it needs.
#   bash scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# Its own scratch path: the static flags would otherwise rebuild .build's release products.
build=(swift build -c release --static-swift-stdlib --scratch-path .build-release --product countersign)
"${build[@]}" >&2
bin=$("${build[@]}" --show-bin-path)
rm -rf dist
mkdir -p dist
cp "$bin/countersign" dist/
cp -R "$bin"/*.resources dist/
(cd dist && sha256sum countersign > SHA256SUMS)
dist/countersign version
if ldd dist/countersign | grep -i swift; then
  echo "release.sh: the binary still needs a Swift library (above)" >&2
  exit 1
fi
echo "shared libraries:"
ldd dist/countersign | awk '{print "  " $1}'
ls -l dist/countersign | awk '{printf "size: %.1f MiB\n", $5 / 1048576}'
