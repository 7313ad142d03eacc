# Sourced. `build_deps_missing` prints the Debian packages the Swift build needs and this machine lacks:
# the system libraries the package links (libargon2, libsodium, libqrencode) and pkg-config to find them.
# Each script adds its own tools and installs the lot with one apt-get, only when something is missing.
build_deps_missing() {
  [ -f /usr/include/argon2.h ] || echo libargon2-dev
  [ -f /usr/include/sodium.h ] || echo libsodium-dev
  [ -f /usr/include/qrencode.h ] || echo libqrencode-dev
  command -v pkg-config >/dev/null || echo pkg-config
}
