#!/usr/bin/env bash
# A release build of `countersign` and `countersign-server` with the Swift runtime and Foundation linked in
# (--static-swift-stdlib): the machine they run on needs glibc 2.36 or later (the packed relocations, see
# Package.swift) and Debian's libargon2-1, libsodium23 and libqrencode4, no Swift. A stripped binary's
# crash trace names no functions: `addr2line -f -e dist/NAME.debug ADDRESS` does. Writes dist/: both binaries (stripped; their debug information in *.debug), the server's resources bundle (the web client and
# the OpenAPI document, which it finds beside itself) and SHA256SUMS; prints their versions, the shared
# libraries they need and their sizes.
#   bash scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# Its own scratch path: the static flags would otherwise rebuild .build's release products. One product
# per invocation: swift build honours only the last --product given.
build=(swift build -c release --static-swift-stdlib --scratch-path .build-release)
"${build[@]}" --product countersign-server >&2
"${build[@]}" --product countersign >&2
bin=$("${build[@]}" --show-bin-path)
rm -rf dist
mkdir -p dist
cp "$bin/countersign" "$bin/countersign-server" dist/
cp -R "$bin"/*.resources dist/
# Debug information apart (gdb finds it by the debug link), the binaries stripped: half their size.
for b in countersign countersign-server; do
  objcopy --only-keep-debug "dist/$b" "dist/$b.debug"
  strip --strip-debug --strip-unneeded "dist/$b"
  objcopy --add-gnu-debuglink="dist/$b.debug" "dist/$b"
done
(cd dist && sha256sum countersign countersign-server > SHA256SUMS)
dist/countersign version
dist/countersign-server version
for b in countersign countersign-server; do
  if ldd "dist/$b" | grep -i swift; then
    echo "release.sh: dist/$b still needs a Swift library (above)" >&2
    exit 1
  fi
  echo "$b: $(ls -l "dist/$b" | awk '{printf "%.1f MiB", $5 / 1048576}'), shared libraries: $(ldd "dist/$b" | awk '{print $1}' | tr '\n' ' ')"
done
